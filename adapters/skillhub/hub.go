package skillhub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// Hub fetches skills from their sources.
type Hub struct {
	// CacheDir holds the git repositories fetched ($HERMES_HOME/skillhub/cache).
	CacheDir string
	// Client fetches indexes and their files (nil: a client with a 30s
	// timeout).
	Client *http.Client
	// Git is the git program (default "git").
	Git string
	// GitHub is where owner/repo identifiers are cloned from (default
	// DefaultGitHub).
	GitHub string
}

// Bundle is one skill as a source holds it at a pin.
type Bundle struct {
	Origin Origin
	// Name and Description are the SKILL.md's.
	Name, Description string
	Files             skills.Snapshot
	// Notes say what could not be verified (an index without digests).
	Notes []string
}

// Entry is one skill a tap lists.
type Entry struct {
	Name, Description string
	Source            Source
}

// TamperedError is content that does not match what its source promised:
// an index's digest, or a commit that does not follow the one installed.
type TamperedError struct {
	What   string
	Detail string
}

// Error says what did not match.
func (e *TamperedError) Error() string {
	return fmt.Sprintf("refused: %s does not match what its source promised (%s); nothing was installed", e.What, e.Detail)
}

// ErrNotFound is a source that holds no such skill.
var ErrNotFound = errors.New("no such skill at the source")

func (h *Hub) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Fetch reads the skill src names at pin ("": the latest its ref or index
// gives), verified against what the source promises.
func (h *Hub) Fetch(ctx context.Context, src Source, pin string) (Bundle, error) {
	var b Bundle
	var err error
	switch src.Kind {
	case KindGit:
		b, err = h.fetchGit(ctx, src, pin)
	case KindIndex:
		b, err = h.fetchIndex(ctx, src, pin)
	default:
		return Bundle{}, fmt.Errorf("unknown source kind %q", src.Kind)
	}
	if err != nil {
		return Bundle{}, err
	}
	s, err := skills.Parse(b.Files.SkillMD())
	if err != nil {
		return Bundle{}, fmt.Errorf("%s: SKILL.md: %w", src, err)
	}
	b.Name, b.Description = s.Name, s.Description
	return b, nil
}

// Latest is the pin the source gives now: the commit its ref points at,
// or the digest its index gives (the content's own hash when the index
// gives none).
func (h *Hub) Latest(ctx context.Context, src Source) (string, error) {
	switch src.Kind {
	case KindGit:
		return h.resolveGit(ctx, src)
	case KindIndex:
		ix, e, err := h.entry(ctx, src)
		if err != nil {
			return "", err
		}
		if e.Digest != "" {
			return e.Digest, nil
		}
		b, err := h.fetchEntry(ctx, src, ix, e, "")
		if err != nil {
			return "", err
		}
		return b.Origin.Pin, nil
	}
	return "", fmt.Errorf("unknown source kind %q", src.Kind)
}

// Follows checks that the pin next may replace prev of the same source: a
// commit must descend from the one installed (a history rewritten under
// it is refused as a *TamperedError). Index digests have no order.
func (h *Hub) Follows(ctx context.Context, src Source, prev, next string) error {
	if src.Kind != KindGit || prev == next {
		return nil
	}
	return h.descends(ctx, src, prev, next)
}

// List lists the skills of a tap.
func (h *Hub) List(ctx context.Context, tap Source) ([]Entry, error) {
	switch tap.Kind {
	case KindGit:
		return h.listGit(ctx, tap)
	case KindIndex:
		ix, err := h.index(ctx, tap)
		if err != nil {
			return nil, err
		}
		var out []Entry
		for _, e := range ix.Skills {
			if skillName.MatchString(e.Name) {
				out = append(out, Entry{Name: e.Name, Description: e.Description, Source: Source{Kind: KindIndex, Base: ix.base, Name: e.Name}})
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown source kind %q", tap.Kind)
}

// Match says whether an entry matches a search query: every word of it in
// the name or description, case aside.
func Match(e Entry, query string) bool {
	text := strings.ToLower(e.Name + " " + e.Description)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}
