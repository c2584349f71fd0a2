package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Stream is the stream that holds the skill name's versions.
func Stream(name string) string { return "skill-" + name }

// NameOf returns the skill name of a skill stream, or "" when stream is
// not one.
func NameOf(stream string) string {
	name, _ := strings.CutPrefix(stream, "skill-")
	if name == stream || !validName.MatchString(name) {
		return ""
	}
	return name
}

// File is one file of a skill: its content, or for a file too large to
// keep in the log (see ReadDir) its hash and size alone.
type File struct {
	Data []byte
	Mode fs.FileMode
	// Hash (hex SHA-256) and Size are set when Data is not kept.
	Hash string
	Size int64
}

// Kept says whether the file's content is held (not its hash alone).
func (f File) Kept() bool { return f.Hash == "" }

// Sum is the hex SHA-256 of the file's content.
func (f File) Sum() string {
	if !f.Kept() {
		return f.Hash
	}
	return digest(f.Data)
}

// Snapshot is a skill's files, SKILL.md and its linked files, by
// slash-separated path relative to the skill's directory.
type Snapshot map[string]File

// skillMD is the name of the file that makes a directory a skill.
const skillMD = "SKILL.md"

// SkillMD is the text of SKILL.md.
func (s Snapshot) SkillMD() string { return string(s[skillMD].Data) }

// Hash is the hex SHA-256 of the paths and contents of the files (not of
// their modes): two snapshots of the same hash hold the same text.
func (s Snapshot) Hash() string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(s)) {
		fmt.Fprintf(h, "%s\x00%s\n", p, s[p].Sum())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Size is the bytes of all the files.
func (s Snapshot) Size() int {
	n := 0
	for _, f := range s {
		n += len(f.Data) + int(f.Size)
	}
	return n
}

// Paths lists the files, SKILL.md first, the others sorted.
func (s Snapshot) Paths() []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(s)) {
		if p != skillMD {
			out = append(out, p)
		}
	}
	if _, ok := s[skillMD]; ok {
		out = append([]string{skillMD}, out...)
	}
	return out
}

// Linked is the snapshot's files other than SKILL.md, as a SkillWritten
// holds them.
func (s Snapshot) Linked() []schema.SkillFile { return s.linked() }

// linked is the snapshot's files other than SKILL.md, as events hold them.
func (s Snapshot) linked() []schema.SkillFile {
	var out []schema.SkillFile
	for _, p := range s.Paths() {
		if p != skillMD {
			f := s[p]
			out = append(out, schema.SkillFile{Path: p, Data: f.Data, SHA256: f.Hash, Size: f.Size, Mode: uint32(f.Mode.Perm())})
		}
	}
	return out
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Version is one event of a skill's stream and the skill as it left it.
type Version struct {
	// Number counts the skill's versions from 1.
	Number   int
	Revision uint64
	Time     time.Time
	// Type is the event's type; Action what made it (create, edit, patch,
	// adopt, rollback, archive, restore).
	Type   string
	Action string
	Author schema.SkillAuthor
	Reason string
	// Dir is the skill's directory relative to the skills directory,
	// slash-separated.
	Dir string
	// Files are the skill's files after the event; an archived skill keeps
	// those it had when it was archived.
	Files    Snapshot
	Archived bool
}

// next is the version p makes of prev (nil: the stream's first).
func next(name string, prev *Version, p schema.Payload) (Version, bool) {
	v := Version{Number: 1, Dir: name, Files: Snapshot{}}
	if prev != nil {
		v = *prev
		v.Number++
		v.Files = maps.Clone(prev.Files)
	}
	switch e := p.(type) {
	case schema.SkillWritten:
		v.Type, v.Action, v.Reason, v.Archived = schema.TypeSkillWritten, e.Action, e.Reason, false
		v.Author = schema.SkillAuthor{}
		if e.Author != nil {
			v.Author = *e.Author
		}
		if e.Dir != "" {
			v.Dir = e.Dir
		}
		v.Files = Snapshot{skillMD: {Data: []byte(e.Content), Mode: 0o644}}
		for _, f := range e.Files {
			v.Files[f.Path] = File{Data: f.Data, Mode: fs.FileMode(f.Mode).Perm(), Hash: f.SHA256, Size: f.Size}
		}
	case schema.SkillPatched:
		v.Type, v.Action, v.Author, v.Reason = schema.TypeSkillPatched, "patch", e.Author, e.Reason
		mode := v.Files[skillMD].Mode
		if mode == 0 {
			mode = 0o644
		}
		v.Files[skillMD] = File{Data: []byte(e.Content), Mode: mode}
	case schema.SkillArchived:
		v.Type, v.Action, v.Author, v.Reason, v.Archived = schema.TypeSkillArchived, "archive", e.Author, e.Reason, true
	case schema.SkillRestored:
		v.Type, v.Action, v.Author, v.Reason, v.Archived = schema.TypeSkillRestored, "restore", e.Author, e.Reason, false
	default:
		return Version{}, false
	}
	return v, true
}

// History reads the skill name's versions, oldest first, and the revision
// to expect when appending the next.
func History(ctx context.Context, store events.Store, name string) ([]Version, events.Expected, error) {
	rs, err := store.ReadStream(ctx, Stream(name), events.Forward, 0, 0)
	if err != nil {
		return nil, events.Any, fmt.Errorf("read the history of skill %s: %w", name, err)
	}
	expected := events.NoStream
	var out []Version
	for _, r := range rs {
		expected = events.Exact(r.Revision)
		if r.IsTombstone() {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, expected, fmt.Errorf("skill %s version %d: %w", name, len(out)+1, err)
		}
		var prev *Version
		if len(out) > 0 {
			prev = &out[len(out)-1]
		}
		v, ok := next(name, prev, p)
		if !ok {
			continue
		}
		v.Number, v.Revision, v.Time = len(out)+1, r.Revision, r.Time
		out = append(out, v)
	}
	return out, expected, nil
}
