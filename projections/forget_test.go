package projections_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
)

// forgetful is a model that counts the batches it flushed and the times
// its caches were dropped.
type forgetful struct{ flushes, forgets int }

func (*forgetful) Name() string                                   { return "forgetful" }
func (*forgetful) Version() int                                   { return 1 }
func (*forgetful) Create(*projections.Tx) error                   { return nil }
func (*forgetful) Drop(*projections.Tx) error                     { return nil }
func (*forgetful) Apply(*projections.Tx, projections.Event) error { return nil }
func (c *forgetful) Flush(*projections.Tx) error                  { c.flushes++; return nil }
func (c *forgetful) Forget()                                      { c.forgets++ }

// TestCachesAreDroppedNowAndThen: a model's in-memory caches do not live
// for ever in a long-running process: after many committed batches they
// are dropped (and read again from the tables as needed), without any
// other process or failure asking for it.
func TestCachesAreDroppedNowAndThen(t *testing.T) {
	db, err := projections.OpenDB(filepath.Join(t.TempDir(), "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := &forgetful{}
	p := db.Projection(m)
	ctx := context.Background()
	for i := range 1000 {
		if err := p.Apply(ctx, []projections.Event{{Recorded: events.Recorded{Position: uint64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if m.flushes != 1000 {
		t.Fatalf("%d batches flushed, want 1000", m.flushes)
	}
	if m.forgets < 2 || m.forgets > 10 {
		t.Fatalf("caches dropped %d times in 1000 batches: want a few, neither never nor every batch", m.forgets)
	}
}
