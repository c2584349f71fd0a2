// Package skillhub brings skills others wrote into the home library: from
// git repositories (GitHub's owner/repo/path, or any git URL) and from the
// well-known index endpoints of the Agent Skills discovery format
// (/.well-known/agent-skills/index.json, and the older
// /.well-known/skills/index.json). What it fetches is pinned (a commit, or
// the skill's content digest), verified against what the source promised
// (a tampered download is an *TamperedError) and scanned (Scan) before the
// command line installs it as a version of the skill's stream, authored by
// the hub (see Origin). Taps are the sources searched by name.
package skillhub

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Kinds of Source.
const (
	// KindGit is a skill in a git repository.
	KindGit = "git"
	// KindIndex is a skill named by a well-known index.
	KindIndex = "index"
)

// Source is where a skill (or, for a tap, a set of skills) comes from.
type Source struct {
	Kind string
	// Repo is the git repository's URL, Path the skill's directory in it
	// (slash-separated, "" for the root), Ref the branch, tag or commit
	// followed ("" for the repository's HEAD).
	Repo, Path, Ref string
	// Base is the index's directory (its URL without /index.json) and
	// Name the skill it names ("" for a tap: the whole index).
	Base, Name string
}

// DefaultGitHub is where owner/repo identifiers are cloned from.
const DefaultGitHub = "https://github.com"

// wellKnown are the index directories tried, newest format first.
var wellKnown = []string{"/.well-known/agent-skills", "/.well-known/skills"}

var ownerRepo = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/.*)?$`)

// ParseSource reads a skill's identifier:
//
//	owner/repo/path/to/skill[@ref]        a GitHub repository (github: prefix optional)
//	git+URL[//path/to/skill][@ref]        any git repository (git://, https://, ssh://, file://)
//	URL.git[//path/to/skill][@ref]        the same, for a URL ending in .git
//	https://host/.well-known/agent-skills/NAME   a skill of a well-known index
//	well-known:https://host/.well-known/skills/NAME
//	https://host                          (a tap) the host's well-known index
//
// github is the base URL of owner/repo identifiers (DefaultGitHub when "").
func ParseSource(id, github string) (Source, error) {
	if github == "" {
		github = DefaultGitHub
	}
	id = strings.TrimSpace(id)
	raw := strings.TrimPrefix(id, "well-known:")
	if strings.Contains(raw, "/.well-known/") || (raw != id) {
		return parseIndex(raw)
	}
	if rest, ok := strings.CutPrefix(id, "github:"); ok {
		id = rest
	}
	if rest, ok := strings.CutPrefix(id, "git+"); ok {
		return parseGit(rest)
	}
	u, err := url.Parse(id)
	if err == nil && u.Scheme != "" && u.Host != "" || strings.HasPrefix(id, "file://") {
		switch {
		case u.Scheme == "git" || u.Scheme == "ssh" || u.Scheme == "file" || strings.Contains(u.Path, ".git"):
			return parseGit(id)
		case u.Scheme == "http" || u.Scheme == "https":
			if gh := strings.TrimPrefix(strings.TrimSuffix(github, "/"), "https://"); u.Host == gh || u.Host == "github.com" {
				return parseGitHub(strings.TrimPrefix(u.Path, "/"), strings.TrimSuffix(id, u.Path))
			}
			return parseIndex(id)
		}
		return Source{}, fmt.Errorf("%q: a git repository (git+URL, URL.git) or a well-known index (https://host)", id)
	}
	if bare, _ := cutRef(id); ownerRepo.MatchString(bare) {
		return parseGitHub(id, github)
	}
	return Source{}, fmt.Errorf("%q is not a skill source: use owner/repo/path, git+URL//path, or https://host/.well-known/agent-skills/NAME", id)
}

// cutRef splits a trailing @ref off id: after the last slash only, so the
// user@ of ssh://git@host/ stays.
func cutRef(id string) (string, string) {
	slash := strings.LastIndex(id, "/")
	if at := strings.LastIndex(id, "@"); at > slash && at > 0 {
		return id[:at], id[at+1:]
	}
	return id, ""
}

func parseGitHub(id, base string) (Source, error) {
	id, ref := cutRef(strings.TrimSuffix(id, "/"))
	parts := strings.SplitN(id, "/", 3)
	if len(parts) < 2 {
		return Source{}, fmt.Errorf("%q: give owner/repo[/path]", id)
	}
	s := Source{Kind: KindGit, Repo: strings.TrimSuffix(base, "/") + "/" + parts[0] + "/" + strings.TrimSuffix(parts[1], ".git") + ".git", Ref: ref}
	if len(parts) == 3 {
		p := parts[2]
		// github.com/owner/repo/tree/main/path, as a browser shows it.
		if rest, ok := strings.CutPrefix(p, "tree/"); ok {
			br, sub, _ := strings.Cut(rest, "/")
			if s.Ref == "" {
				s.Ref = br
			}
			p = sub
		}
		s.Path = p
	}
	return s, s.check()
}

func parseGit(id string) (Source, error) {
	id, ref := cutRef(id)
	s := Source{Kind: KindGit, Ref: ref, Repo: id}
	scheme := strings.Index(id, "://")
	from := 0
	if scheme >= 0 {
		from = scheme + 3
	}
	if i := strings.Index(id[from:], "//"); i >= 0 {
		s.Repo, s.Path = id[:from+i], id[from+i+2:]
	}
	return s, s.check()
}

func parseIndex(id string) (Source, error) {
	u, err := url.Parse(id)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Source{}, fmt.Errorf("%q: a well-known index is an http(s) URL", id)
	}
	name := u.Fragment
	u.Fragment = ""
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/SKILL.md")
	for _, wk := range wellKnown {
		if i := strings.Index(p, wk); i >= 0 {
			rest := strings.TrimPrefix(p[i+len(wk):], "/")
			switch {
			case rest == "index.json" || rest == "":
			case !strings.Contains(rest, "/"):
				name = rest
			default:
				return Source{}, fmt.Errorf("%q: name one skill, %s/NAME", id, wk)
			}
			u.Path = p[:i+len(wk)]
			s := Source{Kind: KindIndex, Base: u.String(), Name: name}
			return s, s.check()
		}
	}
	u.Path = p // a host (or a path) whose well-known index is looked for
	s := Source{Kind: KindIndex, Base: u.String(), Name: name}
	return s, s.check()
}

var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func (s Source) check() error {
	for _, raw := range []string{s.Repo, s.Base} {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if _, secret := u.User.Password(); secret {
				return errors.New("the URL holds a password or token, which the skill's history would keep: give the URL without it and let git's credential helper (or ~/.netrc) supply it")
			}
		}
	}
	switch s.Kind {
	case KindGit:
		if s.Repo == "" {
			return errors.New("no repository")
		}
		if s.Path != "" && (path.IsAbs(s.Path) || strings.Contains("/"+s.Path+"/", "/../")) {
			return fmt.Errorf("path %q is not inside the repository", s.Path)
		}
		if strings.HasPrefix(s.Ref, "-") || strings.ContainsAny(s.Ref, " \t\n:") {
			return fmt.Errorf("ref %q: a branch, tag or commit", s.Ref)
		}
	case KindIndex:
		if s.Name != "" && !skillName.MatchString(s.Name) {
			return fmt.Errorf("skill name %q: lowercase letters, digits, hyphens", s.Name)
		}
	}
	return nil
}

// String is the identifier ParseSource reads back to s.
func (s Source) String() string {
	switch s.Kind {
	case KindGit:
		out := "git+" + s.Repo
		if s.Path != "" {
			out += "//" + s.Path
		}
		if s.Ref != "" {
			out += "@" + s.Ref
		}
		return out
	case KindIndex:
		if s.Name == "" {
			return s.Base
		}
		if !isWellKnown(s.Base) {
			return s.Base + "#" + s.Name
		}
		return s.Base + "/" + s.Name
	}
	return ""
}

func isWellKnown(base string) bool {
	for _, wk := range wellKnown {
		if strings.HasSuffix(base, wk) {
			return true
		}
	}
	return false
}

// At is the source of the skill in the directory sub of a tap s (a
// repository's path, or an index's skill name).
func (s Source) At(sub string) Source {
	out := s
	switch s.Kind {
	case KindGit:
		out.Path = strings.Trim(path.Join(s.Path, sub), "/")
	case KindIndex:
		out.Name = sub
	}
	return out
}

// Origin is where an installed version came from: the source and its pin
// (the commit, or sha256:<hex> of the skill's files). Its text is the
// SkillAuthor.Hub of the version's event, "<source> <pin>".
type Origin struct {
	Source Source
	Pin    string
}

// String is the origin as the event holds it.
func (o Origin) String() string { return o.Source.String() + " " + o.Pin }

// ParseOrigin reads an Origin's text.
func ParseOrigin(text, github string) (Origin, error) {
	i := strings.LastIndex(text, " ")
	if i < 0 {
		return Origin{}, fmt.Errorf("hub origin %q has no pin", text)
	}
	s, err := ParseSource(text[:i], github)
	if err != nil {
		return Origin{}, err
	}
	return Origin{Source: s, Pin: text[i+1:]}, nil
}
