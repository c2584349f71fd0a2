package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Staged is a change waiting for review (see Settings.Approval).
type Staged struct {
	schema.MemoryWriteStaged
	// SessionID is the session whose agent asked for it; Time when.
	SessionID string
	Time      time.Time
}

// Summary is the change in one line, as /memory lists it.
func (s Staged) Summary() string {
	label := map[string]string{"memory": "memory", "user": "user profile"}[s.Target]
	switch s.Action {
	case "add":
		return fmt.Sprintf("add to %s: %s", label, s.Content)
	case "replace":
		return fmt.Sprintf("replace in %s: %q -> %s", label, s.OldText, s.Content)
	}
	return fmt.Sprintf("%s from %s: %q", s.Action, label, s.OldText)
}

// Pending lists the changes staged and not decided yet, oldest first.
func Pending(ctx context.Context, store events.Store) ([]Staged, error) {
	rs, err := store.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []Staged
	for _, r := range rs {
		switch r.Type {
		case schema.TypeMemoryWriteStaged, schema.TypeMemoryWriteDecided:
		default:
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, err
		}
		switch e := p.(type) {
		case schema.MemoryWriteStaged:
			out = append(out, Staged{MemoryWriteStaged: e, SessionID: r.SessionID, Time: r.Time})
		case schema.MemoryWriteDecided:
			out = slices.DeleteFunc(out, func(s Staged) bool { return s.ID == e.ID })
		}
	}
	return out, nil
}

// pick is the pending changes id names ("all": every one).
func pick(ctx context.Context, store events.Store, id string) ([]Staged, error) {
	pending, err := Pending(ctx, store)
	if err != nil {
		return nil, err
	}
	if len(pending) == 0 {
		return nil, errors.New("no memory changes wait for review")
	}
	if id == "all" {
		return pending, nil
	}
	for _, s := range pending {
		if s.ID == id {
			return []Staged{s}, nil
		}
	}
	return nil, fmt.Errorf("no memory change %s waits for review (/memory lists them)", id)
}

// Approve makes the staged change id ("all": every one) in the memories
// of dir, each with its decision (MemoryWriteDecided) in the same append;
// by says where (cli, telegram, ...). A change that no longer applies
// (its entry is gone, the file would be over its limit) is decided
// approved with the error, and not made. It returns a line per change.
func Approve(ctx context.Context, store events.Store, dir, id, by string) ([]string, error) {
	todo, err := pick(ctx, store, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range todo {
		decided := schema.MemoryWriteDecided{ID: s.ID, Approved: true, By: by}
		msg, err := commit(ctx, store, dir, change{target: s.Target, action: s.Action, content: s.Content, old: s.OldText,
			meta: schema.Meta{SessionID: s.SessionID}, before: []schema.Payload{decided}, source: "approved by " + by})
		if err != nil {
			decided.Error = err.Error()
			if aerr := appendAny(ctx, store, decided); aerr != nil {
				return out, aerr
			}
			out = append(out, fmt.Sprintf("%s could not be made: %v", s.ID, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s approved: %s", s.ID, msg))
	}
	return out, nil
}

// Reject drops the staged change id ("all": every one): a decision that
// is recorded, nothing else changes.
func Reject(ctx context.Context, store events.Store, id, by string) ([]string, error) {
	todo, err := pick(ctx, store, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range todo {
		if err := appendAny(ctx, store, schema.MemoryWriteDecided{ID: s.ID, Approved: false, By: by}); err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("%s rejected: %s", s.ID, s.Summary()))
	}
	return out, nil
}

func appendAny(ctx context.Context, store events.Store, p schema.Payload) error {
	ev, err := schema.NewEnvelope(schema.Meta{}, p)
	if err != nil {
		return err
	}
	_, err = store.Append(ctx, Stream, events.Any, ev)
	return err
}

// Sources of the MemoryUpdated events of a reset and of its undoing.
const (
	SourceReset     = "hermes memory reset"
	SourceResetUndo = "hermes memory reset --undo"
)

// Reset empties the targets' memories in dir: one MemoryUpdated "reset"
// each, with no entries, and the file written empty. It returns the
// entries removed, by target; the log keeps them, and UndoReset puts them
// back.
func Reset(ctx context.Context, store events.Store, dir string, targets ...string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, target := range targets {
		removed, err := replaceAll(ctx, store, dir, target, "reset", SourceReset, func(current []string, _ []schema.MemoryUpdated) ([]string, bool) {
			return nil, len(current) > 0
		})
		if err != nil {
			return out, err
		}
		if len(removed) > 0 {
			out[target] = removed
		}
	}
	return out, nil
}

// UndoReset puts back what the last reset of each target removed, if
// nothing changed the target since: a MemoryUpdated "restore" holding the
// entries before the reset. It returns the entries restored, by target.
func UndoReset(ctx context.Context, store events.Store, dir string, targets ...string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, target := range targets {
		var restored []string
		_, err := replaceAll(ctx, store, dir, target, "restore", SourceResetUndo, func(current []string, hist []schema.MemoryUpdated) ([]string, bool) {
			if len(hist) < 2 || hist[len(hist)-1].Action != "reset" || hist[len(hist)-1].Source != SourceReset {
				return nil, false
			}
			restored = slices.Clone(hist[len(hist)-2].Entries)
			return restored, len(restored) > 0
		})
		if err != nil {
			return out, err
		}
		if len(restored) > 0 {
			out[target] = restored
		}
	}
	return out, nil
}

// replaceAll sets target's entries to what next makes of them and of the
// target's history (oldest first), when it says so, as one MemoryUpdated
// of action and source, under the file's lock and after adopting it; it
// returns the entries replaced.
func replaceAll(ctx context.Context, store events.Store, dir, target, action, source string, next func([]string, []schema.MemoryUpdated) ([]string, bool)) ([]string, error) {
	if _, ok := Files[target]; !ok {
		return nil, fmt.Errorf("no memory file for target %q", target)
	}
	d := disk{dir, target}
	unlock, err := lockFile(d)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := adopt(ctx, store, d); err != nil {
		return nil, fmt.Errorf("%w; memory was not changed", err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
		}
		hist, expected, err := targetHistory(ctx, store, target)
		if err != nil {
			return nil, err
		}
		var current []string
		if len(hist) > 0 {
			current = hist[len(hist)-1].Entries
		}
		entries, ok := next(current, hist)
		if !ok {
			return nil, nil
		}
		ev, err := schema.NewEnvelope(schema.Meta{}, schema.MemoryUpdated{Target: target, Action: action, Entries: entries, Source: source})
		if err != nil {
			return nil, err
		}
		_, err = store.Append(ctx, Stream, expected, ev)
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return current, writeOwn(d, entries)
	}
	return nil, errors.New("memory is being changed by other sessions right now; try again")
}

// targetHistory is target's MemoryUpdated events, oldest first, and the
// stream's revision.
func targetHistory(ctx context.Context, store events.Store, target string) ([]schema.MemoryUpdated, events.Expected, error) {
	rs, err := store.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil {
		return nil, events.Any, err
	}
	expected := events.NoStream
	var out []schema.MemoryUpdated
	for _, r := range rs {
		expected = events.Exact(r.Revision)
		if r.Type != schema.TypeMemoryUpdated {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, expected, err
		}
		if m := p.(schema.MemoryUpdated); m.Target == target {
			out = append(out, m)
		}
	}
	return out, expected, nil
}

// Describe is a target's entries as hermes memory status and /memory show
// them: the file, its size against its limit, and each entry.
func Describe(target string, entries []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d entries, %d/%d characters", Files[target], len(entries), size(entries), Limits[target])
	for _, e := range entries {
		fmt.Fprintf(&b, "\n  - %s", strings.ReplaceAll(e, "\n", " "))
	}
	return b.String()
}
