package session

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// failingStore fails the appends its fail func picks.
type failingStore struct {
	events.Store
	fail func(evs []schema.Envelope) error
}

func (f failingStore) Append(ctx context.Context, stream string, expected events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	if err := f.fail(evs); err != nil {
		return events.AppendResult{}, err
	}
	return f.Store.Append(ctx, stream, expected, evs...)
}

func openRecorder(t *testing.T, fail func([]schema.Envelope) error) (*recorder, events.Store) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	if err := Create(ctx, store, "s1", Start{Source: "cli", System: "system"}); err != nil {
		t.Fatal(err)
	}
	rs, err := store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := rs[len(rs)-1]
	return &recorder{store: failingStore{store, fail}, stream: events.SessionStream("s1"), session: "s1", revision: last.Revision, lastID: last.ID}, store
}

// TestRecorderDeferredAppends: appends whose sync is deferred (a tool's
// result) are not waited for, yet the stream holds every event once, in
// the order recorded, each caused by the one before, whatever mix of
// deferred and waited appends made it.
func TestRecorderDeferredAppends(t *testing.T) {
	r, store := openRecorder(t, func([]schema.Envelope) error { return nil })
	ctx := context.Background()
	lazy := events.DeferSync(ctx)
	var want []string
	for i := 0; i < 30; i++ {
		c := ctx
		if i%3 != 0 {
			c = lazy
		}
		text := strings.Repeat("x", i)
		if err := r.Record(c, "t1", schema.ToolResultAdded{CallID: "c", Name: "terminal", Content: text}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		want = append(want, text)
	}
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	rs, err := store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	prev := ""
	for _, e := range rs {
		if e.Type != schema.TypeToolResultAdded {
			prev = e.ID
			continue
		}
		p, err := schema.Decode(e.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		if e.CausationID != prev {
			t.Fatalf("event %d caused by %s, want the event before it (%s)", e.Revision, e.CausationID, prev)
		}
		prev = e.ID
		got = append(got, p.(schema.ToolResultAdded).Content)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("stream holds %q\nwant %q", got, want)
	}
	if r.revision != rs[len(rs)-1].Revision {
		t.Fatalf("recorder at revision %d, the stream at %d", r.revision, rs[len(rs)-1].Revision)
	}
}

// TestRecorderDeferredAppendFails: a deferred append that fails is
// reported by the next append, which writes nothing (it would follow a
// gap), and by flush; nothing after it is written.
func TestRecorderDeferredAppendFails(t *testing.T) {
	disk := errors.New("disk full")
	r, store := openRecorder(t, func(evs []schema.Envelope) error {
		if evs[0].Type == schema.TypeToolResultAdded {
			return disk
		}
		return nil
	})
	ctx := context.Background()
	if err := r.Record(events.DeferSync(ctx), "t1", schema.ToolResultAdded{CallID: "c", Name: "terminal", Content: "out"}); err != nil {
		t.Fatalf("a deferred append reported %v before it was waited for", err)
	}
	if err := r.Record(ctx, "t1", schema.AssistantMessageAdded{Content: "next"}); !errors.Is(err, disk) {
		t.Fatalf("the append after a failed deferred one: %v, want %v", err, disk)
	}
	if err := r.Record(ctx, "t1", schema.AssistantMessageAdded{Content: "later"}); err == nil {
		t.Fatal("an append after a lost one was written (a gap in the stream)")
	}
	rs, err := store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rs {
		if e.Type == schema.TypeToolResultAdded || e.Type == schema.TypeAssistantMessageAdded {
			t.Fatalf("%s written after the failed append", e.Type)
		}
	}

	r2, _ := openRecorder(t, func(evs []schema.Envelope) error {
		if evs[0].Type == schema.TypeToolResultAdded {
			return disk
		}
		return nil
	})
	if err := r2.Record(events.DeferSync(ctx), "t1", schema.ToolResultAdded{CallID: "c", Name: "terminal", Content: "out"}); err != nil {
		t.Fatal(err)
	}
	if err := r2.flush(); !errors.Is(err, disk) {
		t.Fatalf("flush after a failed deferred append: %v, want %v", err, disk)
	}
}
