package schema

import "strings"

// A skill's life is a stream of its own, "skill-<name>": every version of
// its SKILL.md and linked files, who wrote it and why. The files under
// $HERMES_HOME/skills are a projection of these streams.

// Kinds of SkillAuthor.
const (
	// AuthorPerson is someone at the command line (hermes skills rollback).
	AuthorPerson = "person"
	// AuthorSession is the agent of a session, through skill_manage.
	AuthorSession = "session"
	// AuthorReview is a background review of a session's turn.
	AuthorReview = "review"
	// AuthorCurator is a curator run.
	AuthorCurator = "curator"
	// AuthorHub is an install or update from a skills hub.
	AuthorHub = "hub"
	// AuthorAdopted is a skill found on disk as no event left it (the
	// Python agent's, a hand edit), taken into the stream.
	AuthorAdopted = "adopted from disk"
)

// SkillAuthor says who made a change to a skill; Kind says which of the
// other fields is set.
type SkillAuthor struct {
	Kind string `json:"kind"`
	// Person is the user name of an AuthorPerson.
	Person string `json:"person,omitempty"`
	// SessionID and TurnID are the session (and its turn) of an
	// AuthorSession, or the session a review or curator run read.
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// ReviewID is the background review's own session of an AuthorReview.
	ReviewID string `json:"review_id,omitempty"`
	// CuratorRun identifies the curator run of an AuthorCurator.
	CuratorRun string `json:"curator_run,omitempty"`
	// Hub is where an AuthorHub's skill came from (repository and commit,
	// or index address and hash).
	Hub string `json:"hub,omitempty"`
}

// String is the author as history lists it: "session 0b7e5c1a", "person
// ada", "adopted from disk".
func (a SkillAuthor) String() string {
	id := func(s string) string {
		if len(s) > 8 {
			return s[:8]
		}
		return s
	}
	parts := []string{a.Kind}
	switch a.Kind {
	case AuthorPerson:
		parts = append(parts, a.Person)
	case AuthorSession:
		parts = append(parts, id(a.SessionID))
	case AuthorReview:
		parts = append(parts, id(a.ReviewID))
	case AuthorCurator:
		parts = append(parts, id(a.CuratorRun))
	case AuthorHub:
		parts = append(parts, a.Hub)
	case "":
		return "unknown"
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// SkillFile is one linked file of a skill (references/, scripts/,
// templates/, assets/, ...): its whole content, or, for a file too large
// to keep in the log, its hash and size alone.
type SkillFile struct {
	// Path is slash-separated, relative to the skill's directory.
	Path string `json:"path"`
	Data []byte `json:"data,omitempty"`
	// SHA256 (hex) and Size stand for Data when it is not kept.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Mode is the file's permission bits (a script's executable bit).
	Mode uint32 `json:"mode,omitempty"`
}

// SkillWritten records a whole version of a skill: its SKILL.md and
// linked files as they are after the change. Version 1 (Name, Action,
// Content) was recorded in the session stream of the skill_manage call,
// with Action create, patch or delete; version 2 adds the rest and is
// appended to the skill's stream.
type SkillWritten struct {
	Name string `json:"name"`
	// Action is what made the version: create, edit, adopt, rollback
	// (version 1 also: patch, delete).
	Action string `json:"action"`
	// Content is SKILL.md.
	Content string `json:"content,omitempty"`
	// Dir is where the skill's directory is, relative to the skills
	// directory, slash-separated ("devops/deploy-check").
	Dir string `json:"dir,omitempty"`
	// Files are the linked files (SKILL.md not among them).
	Files  []SkillFile  `json:"files,omitempty"`
	Author *SkillAuthor `json:"author,omitempty"`
	Reason string       `json:"reason,omitempty"`
}

// SkillPatched records a change to a skill's SKILL.md: the text replaced
// and the whole new SKILL.md, with the SHA-256 of the one it was made to;
// the linked files are as they were.
type SkillPatched struct {
	Name string `json:"name"`
	// Base is the hex SHA-256 of the SKILL.md the patch was applied to.
	Base      string      `json:"base"`
	OldString string      `json:"old_string"`
	NewString string      `json:"new_string"`
	Content   string      `json:"content"`
	Author    SkillAuthor `json:"author"`
	Reason    string      `json:"reason,omitempty"`
}

// SkillArchived takes a skill out of use: its directory is removed from
// the skills directory; its versions stay in the stream.
type SkillArchived struct {
	Name   string      `json:"name"`
	Author SkillAuthor `json:"author"`
	Reason string      `json:"reason,omitempty"`
}

// SkillRestored brings an archived skill back as it was when archived.
type SkillRestored struct {
	Name   string      `json:"name"`
	Author SkillAuthor `json:"author"`
	Reason string      `json:"reason,omitempty"`
}

// Skill event types beside TypeSkillWritten.
const (
	TypeSkillPatched  = "SkillPatched"
	TypeSkillArchived = "SkillArchived"
	TypeSkillRestored = "SkillRestored"
)

// EventType implements Payload.
func (SkillPatched) EventType() string { return TypeSkillPatched }

// EventType implements Payload.
func (SkillArchived) EventType() string { return TypeSkillArchived }

// EventType implements Payload.
func (SkillRestored) EventType() string { return TypeSkillRestored }
