package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
)

// TestDeferSync: an append with events.DeferSync is readable at once, by
// this store and by another opened on the same file, but counts as on disk
// (what the witness may remember) only after a durable commit or the
// delayed flush; Close makes it durable too.
func TestDeferSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, WithWitness(filepath.Join(filepath.Dir(path), "witness.json")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lazy := events.DeferSync(ctx)
	if _, err := s.Append(ctx, "a", events.NoStream, storetest.Event("e", "0")); err != nil {
		t.Fatal(err)
	}
	if d, a := s.durable.Load(), s.acked.Load(); d != a || a != 1 {
		t.Fatalf("after a durable append: durable %d acked %d, want 1 and 1", d, a)
	}
	if _, err := s.Append(lazy, "a", events.Exact(0), storetest.Event("e", "1")); err != nil {
		t.Fatal(err)
	}
	if d, a := s.durable.Load(), s.acked.Load(); d != 1 || a != 2 {
		t.Fatalf("after a lazy append: durable %d acked %d, want 1 and 2", d, a)
	}
	other, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := other.ReadStream(ctx, "a", events.Forward, 0, 0)
	other.Close()
	if err != nil || len(rs) != 2 {
		t.Fatalf("another reader sees %d events (%v), want 2", len(rs), err)
	}
	// The next durable append carries the lazy one to disk.
	if _, err := s.Append(ctx, "a", events.Exact(1), storetest.Event("e", "2")); err != nil {
		t.Fatal(err)
	}
	if d := s.durable.Load(); d != 3 {
		t.Fatalf("after a durable append behind a lazy one: durable %d, want 3", d)
	}
	// With no durable append after it, the delayed flush syncs it.
	if _, err := s.Append(lazy, "a", events.Exact(2), storetest.Event("e", "3")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * lazyDelay)
	for s.durable.Load() != 4 && time.Now().Before(deadline) {
		time.Sleep(lazyDelay / 10)
	}
	if d := s.durable.Load(); d != 4 {
		t.Fatalf("the delayed flush never came: durable %d, want 4", d)
	}
	// Close syncs what the flush has not reached yet.
	if _, err := s.Append(lazy, "a", events.Exact(3), storetest.Event("e", "4")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := s.durable.Load(); d != 5 {
		t.Fatalf("after Close: durable %d, want 5", d)
	}
	w, err := readWitness(filepath.Join(filepath.Dir(path), "witness.json"))
	if err != nil || w == nil || w.Position != 5 {
		t.Fatalf("witness after Close: %+v %v, want position 5", w, err)
	}
}

// TestSubscribeSettle: a subscription with events.WithSettle reads a burst
// of commits after the wait, all of them in order, and not before.
func TestSubscribeSettle(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const settle = 300 * time.Millisecond
	type got struct {
		pos uint64
		at  time.Time
	}
	ch := make(chan got, 16)
	go s.SubscribeAll(events.WithSettle(ctx, settle), 0, func(r events.Recorded) error {
		ch <- got{r.Position, time.Now()}
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the subscription waits for commits
	start := time.Now()
	for i := range 5 {
		exp := events.NoStream
		if i > 0 {
			exp = events.Exact(uint64(i - 1))
		}
		if _, err := s.Append(ctx, "burst", exp, storetest.Event("e", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		select {
		case g := <-ch:
			if g.pos != uint64(i+1) {
				t.Fatalf("event %d at position %d", i, g.pos)
			}
			if g.at.Sub(start) < settle {
				t.Fatalf("event %d read %s after the burst began, before the %s settle", i, g.at.Sub(start), settle)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d never came", i)
		}
	}
}
