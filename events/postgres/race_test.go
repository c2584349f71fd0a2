package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/schema"
)

// Several processes (stores with pools of their own) append to the same
// streams at once, with conditions and without, their group commits
// interleaving in the database. Nothing is lost, doubled or misplaced: every
// acknowledged append is in the log at the position and revisions it was
// told, each stream's revisions run without a gap, the log's positions
// are unique, and nothing unacknowledged is there.
func TestProcessesRaceOnSharedStreams(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	dsn := server.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const procs, writers, appends = 3, 6, 40
	stores := make([]*Store, procs)
	for i := range stores {
		s, err := Open(ctx, dsn, WithPollInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	type ack struct {
		stream string
		ids    []string
		res    events.AppendResult
	}
	var mu sync.Mutex
	var acks []ack
	refused := 0
	var wg sync.WaitGroup
	for p := range procs {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[p]
				for i := range appends {
					stream := fmt.Sprintf("shared-%d", (w+i)%3)
					n := 1 + (i % 3)
					evs := make([]schema.Envelope, n)
					ids := make([]string, n)
					for j := range evs {
						evs[j] = storetest.Event(stream, fmt.Sprintf("p%d-w%d-%d-%d", p, w, i, j))
						ids[j] = evs[j].ID
					}
					exp := events.Any
					if i%2 == 1 {
						// Exact at the revision last seen: races the others.
						rs, err := s.ReadStream(ctx, stream, events.Backward, ^uint64(0), 1)
						if err != nil {
							t.Error(err)
							return
						}
						exp = events.NoStream
						if len(rs) > 0 {
							exp = events.Exact(rs[0].Revision)
						}
					}
					res, err := s.Append(ctx, stream, exp, evs...)
					var wrong *events.WrongExpectedVersionError
					mu.Lock()
					switch {
					case err == nil:
						acks = append(acks, ack{stream: stream, ids: ids, res: res})
					case errors.As(err, &wrong):
						refused++
					default:
						t.Error(err)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	all, err := stores[0].ReadAll(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]events.Recorded{}
	seen := map[uint64]bool{}
	for _, r := range all {
		if seen[r.Position] {
			t.Fatalf("position %d twice", r.Position)
		}
		seen[r.Position] = true
		byID[r.ID] = r
	}
	want := 0
	for _, a := range acks {
		want += len(a.ids)
		for j, id := range a.ids {
			r, ok := byID[id]
			if !ok {
				t.Fatalf("an acknowledged event of %s is not in the log", a.stream)
			}
			rev := a.res.NextRevision - uint64(len(a.ids)-1-j)
			pos := a.res.Position - uint64(len(a.ids)-1-j)
			if r.Stream != a.stream || r.Revision != rev || r.Position != pos {
				t.Fatalf("event %d of an append to %s at %s revision %d position %d; told revision %d position %d",
					j, a.stream, r.Stream, r.Revision, r.Position, rev, pos)
			}
		}
	}
	if len(all) != want {
		t.Fatalf("%d events in the log, %d acknowledged", len(all), want)
	}
	for k := range 3 {
		stream := fmt.Sprintf("shared-%d", k)
		rs, err := stores[1].ReadStream(ctx, stream, events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if r.Revision != uint64(i) {
				t.Fatalf("%s: revision %d at index %d", stream, r.Revision, i)
			}
		}
	}
	if refused == 0 {
		t.Error("no conditional append was ever refused: the writers did not race")
	}
	t.Logf("%d appends acknowledged (%d events), %d refused", len(acks), want, refused)
}
