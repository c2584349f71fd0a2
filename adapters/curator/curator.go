// Package curator keeps the home's skill library small and good: it reads
// the skills' streams and the sessions' events (which skills the agent
// read with skill_view, and when), finds duplicates, near-duplicates and
// skills long unused, and proposes archiving them. Applying a proposal is
// a SkillArchived on the skill's stream by the curator run: reversible
// with `hermes skills rollback` or `hermes skills restore`. Pinned skills
// are never touched, nor are skills installed from a hub (their hub
// manages them): a duplicate pair whose copy to archive is one of them is
// left as it is.
//
// Similarity is the Jaccard index of the two skills' sets of word
// shingles (three consecutive words, lowercased, punctuation aside) of
// their description and body: 1 for the same text, about 0.7 for one
// rewritten in part. Two skills at or above Config.NearDuplicate are
// near-duplicates; at 1, duplicates.
package curator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Config is how a survey judges the library.
type Config struct {
	// StaleAfter is how long without use makes a skill stale (reported);
	// ArchiveAfter how long makes it proposed for archiving. A skill never
	// used is judged from when it was written.
	StaleAfter, ArchiveAfter time.Duration
	// NearDuplicate is the least similarity of two near-duplicates.
	NearDuplicate float64
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Defaults are the Python Hermes Agent's (30 and 90 days) and a
// near-duplicate at 0.7.
func Defaults() Config {
	return Config{StaleAfter: 30 * 24 * time.Hour, ArchiveAfter: 90 * 24 * time.Hour, NearDuplicate: 0.7}
}

// Skill is one live skill of the library as the survey saw it.
type Skill struct {
	Name    string
	Version int
	// Written is when its first version was written; Changed its last
	// (by anyone but the curator).
	Written, Changed time.Time
	// Uses counts the skill_view calls of it and its loads by
	// /<skill-name> (UserMessageAdded.Skills) in every session; LastUsed
	// is the last (zero: never).
	Uses     int
	LastUsed time.Time
	Pinned   bool
	// Hub: installed from a skills hub (managed by it).
	Hub   bool
	Files skills.Snapshot
}

// Active is the last sign of life: the last use, else the last change.
func (s Skill) Active() time.Time {
	if s.LastUsed.After(s.Changed) {
		return s.LastUsed
	}
	return s.Changed
}

// Kinds of Proposal.
const (
	Duplicate     = "duplicate"
	NearDuplicate = "near-duplicate"
	Stale         = "unused"
)

// Proposal is one change a survey proposes: archive Skill.
type Proposal struct {
	Skill string
	Kind  string
	// Of is the skill kept in its place (duplicates), Similarity theirs.
	Of         string
	Similarity float64
	Reason     string
}

// Report is what a survey found.
type Report struct {
	Skills    []Skill
	Proposals []Proposal
	// Stale are skills unused for StaleAfter, not yet for ArchiveAfter.
	Stale []string
	// Spared are proposals not made because of a pin or a hub, said why.
	Spared []string
}

// Survey reads the library and the log and says what to archive.
func Survey(ctx context.Context, store events.Store, k *skills.Keeper, cfg Config) (Report, error) {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	names, uses, last, err := readLog(ctx, store)
	if err != nil {
		return Report{}, err
	}
	for _, n := range k.Names() {
		names[n] = true
	}
	pins, err := k.Pinned()
	if err != nil {
		return Report{}, err
	}
	var r Report
	for _, name := range slices.Sorted(maps.Keys(names)) {
		hist, _, err := skills.History(ctx, store, name)
		if err != nil {
			return Report{}, err
		}
		if len(hist) == 0 || hist[len(hist)-1].Archived {
			continue
		}
		latest := hist[len(hist)-1]
		s := Skill{Name: name, Version: latest.Number, Written: hist[0].Time, Uses: uses[name], LastUsed: last[name], Pinned: pins[name], Files: latest.Files}
		for _, v := range hist {
			if v.Author.Kind != schema.AuthorCurator {
				s.Changed = v.Time
			}
			if v.Author.Kind == schema.AuthorHub && (v.Action == "install" || v.Action == "update") {
				s.Hub = true
			}
		}
		r.Skills = append(r.Skills, s)
	}
	r.propose(cfg, now())
	return r, nil
}

// readLog reads the names of the skills with streams, and each skill's
// skill_view calls, from the whole log.
func readLog(ctx context.Context, store events.Store) (names map[string]bool, uses map[string]int, last map[string]time.Time, err error) {
	names, uses, last = map[string]bool{}, map[string]int{}, map[string]time.Time{}
	var after uint64
	for {
		batch, err := store.ReadAll(ctx, after, 1000)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read the log: %w", err)
		}
		for _, rec := range batch {
			after = rec.Position
			if n := skills.NameOf(rec.Stream); n != "" {
				names[n] = true
				continue
			}
			if rec.Type == schema.TypeUserMessageAdded {
				// Skills loaded by /<skill-name> count as uses too.
				if p, err := schema.Decode(rec.Envelope); err == nil {
					for _, n := range p.(schema.UserMessageAdded).Skills {
						uses[n]++
						if rec.Time.After(last[n]) {
							last[n] = rec.Time
						}
					}
				}
				continue
			}
			if rec.Type != schema.TypeToolCallStarted {
				continue
			}
			p, err := schema.Decode(rec.Envelope)
			if err != nil {
				continue
			}
			call, ok := p.(schema.ToolCallStarted)
			if !ok || call.Name != "skill_view" || call.Server != "" {
				continue
			}
			var a struct{ Name string }
			if json.Unmarshal([]byte(call.Arguments), &a) != nil || a.Name == "" {
				continue
			}
			uses[a.Name]++
			if rec.Time.After(last[a.Name]) {
				last[a.Name] = rec.Time
			}
		}
		if len(batch) < 1000 {
			return names, uses, last, nil
		}
	}
}

func (r *Report) propose(cfg Config, now time.Time) {
	byName := map[string]*Skill{}
	for i := range r.Skills {
		byName[r.Skills[i].Name] = &r.Skills[i]
	}
	shingles := map[string]map[string]bool{}
	for _, s := range r.Skills {
		shingles[s.Name] = shingle(s.Files)
	}
	type pair struct {
		a, b string
		sim  float64
	}
	var pairs []pair
	for i, a := range r.Skills {
		for _, b := range r.Skills[i+1:] {
			if sim := jaccard(shingles[a.Name], shingles[b.Name]); sim >= cfg.NearDuplicate && sim > 0 {
				pairs = append(pairs, pair{a.Name, b.Name, sim})
			}
		}
	}
	slices.SortStableFunc(pairs, func(x, y pair) int {
		switch {
		case x.sim > y.sim:
			return -1
		case x.sim < y.sim:
			return 1
		}
		return 0
	})
	gone := map[string]bool{}
	for _, p := range pairs {
		if gone[p.a] || gone[p.b] {
			continue
		}
		keep, drop := byName[p.a], byName[p.b]
		if better(drop, keep) {
			keep, drop = drop, keep
		}
		kind := NearDuplicate
		if p.sim >= 1 {
			kind = Duplicate
		}
		if why := spared(drop); why != "" {
			r.Spared = append(r.Spared, fmt.Sprintf("%s: %s of %s (similarity %.2f), but %s", drop.Name, kind, keep.Name, p.sim, why))
			continue
		}
		gone[drop.Name] = true
		r.Proposals = append(r.Proposals, Proposal{Skill: drop.Name, Kind: kind, Of: keep.Name, Similarity: p.sim,
			Reason: fmt.Sprintf("%s of %s (similarity %.2f; %s is kept: %s)", kind, keep.Name, p.sim, keep.Name, usage(*keep))})
	}
	for _, s := range r.Skills {
		if gone[s.Name] {
			continue
		}
		idle := now.Sub(s.Active())
		switch {
		case idle >= cfg.ArchiveAfter:
			what := fmt.Sprintf("unused for %d days", int(idle.Hours()/24))
			if s.Uses == 0 {
				what = fmt.Sprintf("never used, written %d days ago", int(idle.Hours()/24))
			}
			if why := spared(&s); why != "" {
				r.Spared = append(r.Spared, fmt.Sprintf("%s: %s, but %s", s.Name, what, why))
				continue
			}
			r.Proposals = append(r.Proposals, Proposal{Skill: s.Name, Kind: Stale, Reason: what})
		case idle >= cfg.StaleAfter:
			r.Stale = append(r.Stale, s.Name)
		}
	}
}

// better says whether a is the copy to keep rather than b: used more,
// used last, written first, by name. A pin does not choose: it only keeps
// its skill from being the one archived (the pair is then left as it is).
func better(a, b *Skill) bool {
	switch {
	case a.Uses != b.Uses:
		return a.Uses > b.Uses
	case !a.LastUsed.Equal(b.LastUsed):
		return a.LastUsed.After(b.LastUsed)
	case !a.Written.Equal(b.Written):
		return a.Written.Before(b.Written)
	}
	return a.Name < b.Name
}

func spared(s *Skill) string {
	switch {
	case s.Pinned:
		return "it is pinned"
	case s.Hub:
		return "it was installed from a hub (hermes skills uninstall removes it)"
	}
	return ""
}

func usage(s Skill) string {
	if s.Uses == 0 {
		return "never used"
	}
	return fmt.Sprintf("used %d times, last %s", s.Uses, s.LastUsed.Format("2006-01-02"))
}

// shingle is the set of three-word shingles of a skill's description and
// body (one-word and two-word texts are their own shingle).
func shingle(files skills.Snapshot) map[string]bool {
	text := files.SkillMD()
	if s, err := skills.Parse(text); err == nil {
		text = s.Description + "\n" + s.Body
	}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := map[string]bool{}
	if len(words) < 3 {
		out[strings.Join(words, " ")] = true
		return out
	}
	for i := 0; i+3 <= len(words); i++ {
		out[strings.Join(words[i:i+3], " ")] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	both := 0
	for s := range a {
		if b[s] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

// Similarity is the similarity of two skills' files (see the package
// comment).
func Similarity(a, b skills.Snapshot) float64 { return jaccard(shingle(a), shingle(b)) }

// NewRun names a curator run.
func NewRun(now time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return "cur-" + now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// Applied is a proposal carried out: the version that archived the skill,
// or why it was not.
type Applied struct {
	Proposal
	Version int
	Err     error
}

// Apply archives the skills of the proposals, as the curator run run: a
// skill pinned since the survey is left alone.
func Apply(ctx context.Context, k *skills.Keeper, run string, ps []Proposal) []Applied {
	var out []Applied
	pins, err := k.Pinned()
	for _, p := range ps {
		a := Applied{Proposal: p}
		switch {
		case err != nil:
			a.Err = err
		case pins[p.Skill]:
			a.Err = fmt.Errorf("pinned since the survey: left alone")
		default:
			v, aerr := k.Archive(ctx, p.Skill, schema.SkillAuthor{Kind: schema.AuthorCurator, CuratorRun: run}, "curator: "+p.Reason)
			a.Version, a.Err = v.Number, aerr
		}
		out = append(out, a)
	}
	return out
}
