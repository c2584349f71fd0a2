// Package memory is the agent's persistent memory: MEMORY.md (its notes)
// and USER.md (the user profile) under $HERMES_HOME/memories. Every change
// is a MemoryUpdated event on the stream "memory", appended with the
// expected revision so that sessions in several processes never lose each
// other's changes; the files are a projection of those events.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Stream holds every memory change.
const Stream = "memory"

// Limits are Hermes' character limits of each file.
var Limits = map[string]int{"memory": 2200, "user": 1375}

// Files maps a target to its file name.
var Files = map[string]string{"memory": "MEMORY.md", "user": "USER.md"}

// Separator is the line between entries.
const Separator = "\n§\n"

// Tool is the memory tool. Changes from one process are serialised by its
// lock; changes from other processes are caught by the expected revision
// and retried.
type Tool struct {
	Store events.Store
	Dir   string // $HERMES_HOME/memories
	// Settings, when set, are memory's switches, read at every call
	// (nil: memory on, no review gate).
	Settings func() Settings
	mu       sync.Mutex
}

// New returns the memory tool over store, writing files into dir.
func New(store events.Store, dir string) *Tool { return &Tool{Store: store, Dir: dir} }

func (*Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "memory", Description: "Save durable facts across sessions. target=memory for your own notes (environment, conventions, lessons), target=user for facts about the user (preferences, style). action=add with content; action=replace or remove select an entry by old_text, a unique substring of it. Keep entries short: the files have character limits.",
		Parameters: map[string]any{"type": "object", "required": []string{"action", "target"}, "properties": map[string]any{
			"action":   map[string]any{"type": "string", "enum": []string{"add", "replace", "remove"}},
			"target":   map[string]any{"type": "string", "enum": []string{"memory", "user"}},
			"content":  map[string]any{"type": "string"},
			"old_text": map[string]any{"type": "string"},
		}}}
}
func (*Tool) Flags() tool.Flags { return tool.Flags{} }

// Current returns target's entries and the stream revision they are at.
func Current(ctx context.Context, store events.Store, target string) ([]string, events.Expected, error) {
	rs, err := store.ReadStream(ctx, Stream, events.Backward, events.End, 0)
	if err != nil {
		return nil, events.Any, err
	}
	expected := events.NoStream
	if len(rs) > 0 {
		expected = events.Exact(rs[0].Revision)
	}
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, expected, err
		}
		if m, ok := p.(schema.MemoryUpdated); ok && m.Target == target {
			return m.Entries, expected, nil
		}
	}
	return nil, expected, nil
}

func size(entries []string) int {
	return len(strings.Join(entries, Separator))
}

func (t *Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		Content string `json:"content"`
		OldText string `json:"old_text"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	_, ok := Limits[a.Target]
	if !ok {
		return "", fmt.Errorf("target must be memory or user, not %q", a.Target)
	}
	a.Content = strings.TrimSpace(clean(a.Content))
	if a.Content != "" {
		if strings.Contains(a.Content, "§") {
			return "", errors.New("content may not contain the entry separator §")
		}
		if err := screen(a.Content); err != nil {
			return "", err
		}
	}
	set := Settings{}
	if t.Settings != nil {
		set = t.Settings()
	}
	if set.Off {
		return "", errors.New("memory is off here (memory.memory_enabled: false in config.yaml; hermes memory on turns it back on): nothing was saved")
	}
	if set.UserOff && a.Target == "user" {
		return "", errors.New("the user profile is off here (memory.user_profile_enabled: false in config.yaml): nothing was saved")
	}
	env := tool.EnvFrom(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	c := change{target: a.Target, action: a.Action, content: a.Content, old: a.OldText, meta: schema.Meta{SessionID: env.SessionID, TurnID: env.TurnID}, stage: set.Approval}
	return commit(ctx, t.Store, t.Dir, c)
}

// Settings are memory's switches (config.yaml's memory section), read at
// each call so that a change made meanwhile (hermes memory off, /memory
// approval on) holds from the next one.
type Settings struct {
	// Off is memory.memory_enabled false: the tool refuses every change.
	Off bool
	// UserOff is memory.user_profile_enabled false: it refuses target=user.
	UserOff bool
	// Approval is memory.write_approval: a change is staged for the
	// person's review (MemoryWriteStaged) instead of made.
	Approval bool
}

// change is one change to a target's entries, and how to record it.
type change struct {
	target, action, content, old string
	meta                         schema.Meta
	// stage records the change as staged instead of making it.
	stage bool
	// before are events appended with the change, before it (the
	// decision that approves a staged change).
	before []schema.Payload
	// source is the MemoryUpdated's Source.
	source string
}

// commit makes (or stages) c under the file's lock: what the file holds
// and the stream does not is adopted first, the change is checked
// against the entries (and the limit), appended with the expected
// revision (again when another process came first), and the file written.
func commit(ctx context.Context, store events.Store, dir string, c change) (string, error) {
	limit := Limits[c.target]
	d := disk{dir, c.target}
	unlock, err := lockFile(d)
	if err != nil {
		return "", fmt.Errorf("lock %s: %w", d.path(), err)
	}
	defer unlock()
	// What the file holds and the stream does not (the Python agent's
	// entries, a hand edit) is taken in first, so the change is made to
	// everything the file holds.
	adopted, err := adopt(ctx, store, d)
	if err != nil {
		return "", fmt.Errorf("%w; memory was not changed", err)
	}
	// Optimistic concurrency: retry when another process changed memory
	// between our read and our append.
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
		}
		entries, expected, err := Current(ctx, store, c.target)
		if err != nil {
			return "", err
		}
		next, err := apply(entries, c.action, c.content, c.old)
		if err != nil {
			return "", err
		}
		if n := size(next); n > limit {
			return "", fmt.Errorf("%s would hold %d characters, over its limit of %d (now %d); replace or remove entries first, or say it shorter",
				Files[c.target], n, limit, size(entries))
		}
		var ps []schema.Payload
		id := ""
		if c.stage {
			id = "m-" + uuid.NewString()[:6]
			ps = append(ps, schema.MemoryWriteStaged{ID: id, Target: c.target, Action: c.action, Content: c.content, OldText: c.old})
		} else {
			ps = append(append(ps, c.before...), schema.MemoryUpdated{Target: c.target, Action: c.action, Entry: first(c.content, c.old), Entries: next, Source: c.source})
		}
		evs := make([]schema.Envelope, 0, len(ps))
		for _, p := range ps {
			ev, err := schema.NewEnvelope(c.meta, p)
			if err != nil {
				return "", err
			}
			evs = append(evs, ev)
		}
		_, err = store.Append(ctx, Stream, expected, evs...)
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			continue
		}
		if err != nil {
			return "", err
		}
		if c.stage {
			return fmt.Sprintf("staged for the user's approval as %s (memory.write_approval is on): not saved yet; the user reviews it with /memory", id), nil
		}
		if err := writeOwn(d, next); err != nil {
			return "", fmt.Errorf("saved, but writing %s failed: %w", Files[c.target], err)
		}
		note := ""
		if adopted > 0 {
			note = fmt.Sprintf("; first took in %d change(s) made to the file outside hermes", adopted)
		}
		return fmt.Sprintf("%s: %s done (%d/%d characters, %d entries)%s", Files[c.target], c.action, size(next), limit, len(next), note), nil
	}
	return "", errors.New("memory is being changed by other sessions right now; try again")
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func apply(entries []string, action, content, old string) ([]string, error) {
	find := func() (int, error) {
		if old == "" {
			return -1, errors.New("old_text is required to select the entry")
		}
		at := -1
		for i, e := range entries {
			if strings.Contains(e, old) {
				if at >= 0 {
					return -1, fmt.Errorf("old_text %q matches more than one entry; give a longer substring", old)
				}
				at = i
			}
		}
		if at < 0 {
			return -1, fmt.Errorf("no entry contains %q", old)
		}
		return at, nil
	}
	next := append([]string(nil), entries...)
	switch action {
	case "add":
		if content == "" {
			return nil, errors.New("content is required")
		}
		for _, e := range entries {
			if strings.EqualFold(strings.TrimSpace(e), content) {
				return nil, errors.New("this entry is already in memory")
			}
		}
		return append(next, content), nil
	case "replace":
		if content == "" {
			return nil, errors.New("content is required")
		}
		i, err := find()
		if err != nil {
			return nil, err
		}
		next[i] = content
		return next, nil
	case "remove":
		i, err := find()
		if err != nil {
			return nil, err
		}
		return append(next[:i], next[i+1:]...), nil
	}
	return nil, fmt.Errorf("action must be add, replace or remove, not %q", action)
}

// writeOwn writes d's file after a change of the tool; the caller holds
// its lock, and adopted it just before, so a file there is ours.
func writeOwn(d disk, entries []string) error {
	text, exists, err := d.read()
	if err != nil {
		return err
	}
	return d.write(text, exists, entries)
}
