package projections_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// batches counts the batches a projection is given while it follows.
type batches struct {
	mu     sync.Mutex
	cp     uint64
	events int
	calls  int
}

func (b *batches) Name() string { return "batches" }
func (b *batches) Checkpoint(context.Context) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cp, nil
}
func (b *batches) Reset(context.Context) error { return nil }
func (b *batches) Apply(_ context.Context, evs []projections.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	b.events += len(evs)
	b.cp = evs[len(evs)-1].Position
	return nil
}

// sharedBatches is batches as a projection whose state processes share:
// a leased runner feeds it only while it holds its lease.
type sharedBatches struct{ *batches }

func (sharedBatches) Shared() bool { return true }

func (b *batches) state() (uint64, int, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cp, b.events, b.calls
}

// TestLinger: a burst of separate commits reaches a following runner with
// a linger as one batch, and without one as a batch per commit; either way
// every event is applied once. The same with leases (a cluster's runner,
// which feeds what it holds through a runner of its own: the linger was
// once lost on the way, and every commit was a batch).
func TestLinger(t *testing.T) {
	for _, c := range []struct {
		linger time.Duration
		leased bool
	}{{0, false}, {2 * time.Second, false}, {0, true}, {2 * time.Second, true}} {
		linger := c.linger
		t.Run(fmt.Sprint("linger ", linger, " leased ", c.leased), func(t *testing.T) {
			store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"), embedded.WithPollInterval(5*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			b := &batches{}
			run := projections.NewRunner(store, zerolog.Nop(), b).WithLinger(linger)
			if c.leased {
				leases := &memLeases{holder: map[string]string{}, leases: map[string]*memLease{}, dead: map[string]bool{}}
				run = projections.NewRunner(store, zerolog.Nop(), sharedBatches{b}).WithLinger(linger).
					WithLeases(memLeaser{m: leases, who: "a"}, 10*time.Millisecond)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run.Run(ctx) }()
			defer func() { cancel(); <-done }()
			// An event before the burst is applied first. It may be
			// applied by the runner's catch-up, its subscription not yet
			// started when the burst begins: the subscription's first
			// read settles as its later ones do (that start once split
			// the burst under load).
			appendOne(t, store, "warm")
			waitFor(t, b, 1)
			_, _, before := b.state()
			// Separate commits, their sync deferred: under load an fsync
			// each could outlast the linger, and the burst with it.
			const n = 5
			for i := range n {
				appendLazy(t, store, fmt.Sprint("s", i))
				time.Sleep(30 * time.Millisecond)
			}
			waitFor(t, b, n+1)
			_, evs, calls := b.state()
			calls -= before
			if evs != n+1 {
				t.Fatalf("%d events applied, want %d", evs, n+1)
			}
			switch {
			case linger > 0 && calls != 1:
				t.Fatalf("a burst of %d commits took %d batches with a linger of %s, want 1", n, calls, linger)
			case linger == 0 && calls < 2:
				t.Fatalf("a burst of %d commits 30 ms apart took %d batch without linger: the test shows nothing", n, calls)
			}
		})
	}
}

func appendOne(t *testing.T, s events.Store, sid string) {
	t.Helper()
	e := schema.MustEnvelope(schema.Meta{SessionID: sid}, schema.SessionStarted{Source: "cli", Model: "m", Reason: schema.StartNew})
	if _, err := s.Append(context.Background(), events.SessionStream(sid), events.NoStream, e); err != nil {
		t.Fatal(err)
	}
}

func appendLazy(t *testing.T, s events.Store, sid string) {
	t.Helper()
	e := schema.MustEnvelope(schema.Meta{SessionID: sid}, schema.SessionStarted{Source: "cli", Model: "m", Reason: schema.StartNew})
	if _, err := s.Append(events.DeferSync(context.Background()), events.SessionStream(sid), events.NoStream, e); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, b *batches, pos uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if cp, _, _ := b.state(); cp >= pos {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner never reached position %d", pos)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
