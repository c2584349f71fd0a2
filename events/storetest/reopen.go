package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
)

// reopen opens s's log again through f.Reopen, closed with the test.
func reopen(t *testing.T, s events.Store, f Features) events.Store {
	t.Helper()
	s2 := f.Reopen(t, s)
	t.Cleanup(func() { s2.Close() })
	return s2
}

// testSurvivesReopen closes a store and opens its log again: the log, the
// head, the streams' revisions and a deletion are all there, and appends
// go on after them.
func testSurvivesReopen(t *testing.T, s events.Store, f Features) {
	ctx := ctxT(t)
	for i := range 6 {
		// Every other append defers its sync (events.DeferSync): Close
		// must leave those on disk too.
		actx := ctx
		if i%2 == 1 {
			actx = events.DeferSync(ctx)
		}
		if _, err := s.Append(actx, events.SessionStream(fmt.Sprint("s", i%3)), events.Any, Event("s", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteStream(ctx, events.SessionStream("s2"), events.Any); err != nil {
		t.Fatal(err)
	}
	before, err := s.ReadAll(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s, f)
	after, err := s2.ReadAll(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("reopened, the log holds %d events, want %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Stream != b.Stream || a.Revision != b.Revision || a.Position != b.Position || string(a.Payload) != string(b.Payload) {
			t.Fatalf("reopened, event %d is %s@%d at %d, was %s@%d at %d", i, a.Stream, a.Revision, a.Position, b.Stream, b.Revision, b.Position)
		}
	}
	if h, err := s2.Head(ctx); err != nil || h != head {
		t.Fatalf("reopened, the head is %d (%v), was %d", h, err, head)
	}
	if _, err := s2.ReadStream(ctx, events.SessionStream("s2"), events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("reopened, the deleted stream reads with %v, want events.ErrStreamDeleted", err)
	}
	// Revisions go on where they were: s0 holds revisions 0 and 1.
	_, err = s2.Append(ctx, events.SessionStream("s0"), events.Exact(0), Event("s", "stale"))
	wantWrong(t, err, 1, true)
	res, err := s2.Append(ctx, events.SessionStream("s0"), events.Exact(1), Event("s", "next"))
	if err != nil || res.NextRevision != 2 || res.Position <= head {
		t.Fatalf("append after reopening: %+v (%v), want revision 2 past position %d", res, err, head)
	}
}

// testSharedLog opens a second store on the log of an open one: each reads
// what the other appends, expected revisions hold across them, and a
// subscriber of one is delivered the other's appends live.
func testSharedLog(t *testing.T, s events.Store, f Features) {
	ctx := ctxT(t)
	s2 := reopen(t, s, f)
	if _, err := s.Append(ctx, "shared", events.NoStream, Event("a", "0")); err != nil {
		t.Fatal(err)
	}
	// The second store's writer must see the first's stream.
	_, err := s2.Append(ctx, "shared", events.NoStream, Event("b", "x"))
	wantWrong(t, err, 0, true)
	if _, err := s2.Append(ctx, "shared", events.Exact(0), Event("b", "1")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "shared", events.Exact(0), Event("a", "x"))
	wantWrong(t, err, 1, true)
	for _, st := range []events.Store{s, s2} {
		rs, err := st.ReadStream(ctx, "shared", events.Forward, 0, 0)
		if err != nil || len(rs) != 2 || string(rs[1].Payload) != `{"content":"1"}` {
			t.Fatalf("a store reads the shared stream as %d events (%v)", len(rs), err)
		}
	}
	got := make(chan events.Recorded, 16)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	head, err := s2.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- s2.SubscribeAll(sctx, head, func(r events.Recorded) error {
			got <- r
			return nil
		})
	}()
	if _, err := s.Append(ctx, "from-first", events.Any, Event("a", "live")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.Stream != "from-first" {
			t.Fatalf("the second store's subscriber got %s, want the first store's append", r.Stream)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second store's subscriber was not delivered the first store's append")
	}
	cancel()
	<-done
}

// testSharedWriters spreads concurrent writers over several stores on one
// log, as over several processes, while a subscriber of one of them
// follows the log: it is delivered every event once, in position order,
// whichever store wrote it.
func testSharedWriters(t *testing.T, s events.Store, f Features) {
	ctx := ctxT(t)
	stores := []events.Store{s, reopen(t, s, f), reopen(t, s, f)}
	const writers, each = 9, 20
	var mu sync.Mutex
	seen := map[string]int{}
	var last uint64
	disorder := 0
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.SubscribeAll(sctx, 0, func(r events.Recorded) error {
			mu.Lock()
			defer mu.Unlock()
			seen[r.ID]++
			if r.Position <= last {
				disorder++
			}
			last = r.Position
			return nil
		})
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := stores[w%len(stores)].Append(ctx, fmt.Sprintf("w%d", w), events.Any, Event("w", fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	all, err := s.ReadAll(ctx, 0, 100000)
	if err != nil || len(all) != writers*each {
		t.Fatalf("the log holds %d events (%v), want %d", len(all), err, writers*each)
	}
	head := all[len(all)-1].Position
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		l := last
		mu.Unlock()
		if l >= head {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber stalled at position %d of %d", l, head)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, r := range all {
		if seen[r.ID] != 1 {
			t.Fatalf("the event at %d (stream %s) was delivered %d times", r.Position, r.Stream, seen[r.ID])
		}
	}
	if disorder > 0 {
		t.Fatalf("the subscriber saw a position go backwards %d times", disorder)
	}
}
