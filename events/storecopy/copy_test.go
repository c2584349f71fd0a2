package storecopy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/schema"
)

func openEmbedded(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seed writes a log with interleaved streams, batches and a deleted one.
func seed(t *testing.T, s events.Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 30 {
		sid := fmt.Sprintf("s%d", i%4)
		if _, err := s.Append(ctx, events.SessionStream(sid), events.Any, storetest.Event(sid, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	batch := []schema.Envelope{storetest.Event("b", "1"), storetest.Event("b", "2"), storetest.Event("b", "3")}
	if _, err := s.Append(ctx, events.SessionStream("b"), events.NoStream, batch...); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, events.SessionStream("s1"), events.Any); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Append(ctx, events.SessionStream("s0"), events.Any, storetest.Event("s0", fmt.Sprintf("late%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// sameLog compares two logs event by event, positions aside.
func sameLog(t *testing.T, a, b events.Store) {
	t.Helper()
	ctx := context.Background()
	x, err := a.ReadAll(ctx, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.ReadAll(ctx, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != len(y) {
		t.Fatalf("%d events, then %d", len(x), len(y))
	}
	for i := range x {
		if why := same(x[i], y[i]); why != "" {
			t.Fatalf("event %d: %s", i, why)
		}
		if !x[i].IsTombstone() && (!x[i].Time.Equal(y[i].Time) || x[i].SessionID != y[i].SessionID || x[i].TurnID != y[i].TurnID) {
			t.Fatalf("event %d: envelope %+v became %+v", i, x[i].Envelope, y[i].Envelope)
		}
	}
}

// TestRoundTripThroughPostgres copies embedded → PostgreSQL → embedded: the
// final log equals the original, revisions, tombstone and all.
func TestRoundTripThroughPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	orig := openEmbedded(t)
	seed(t, orig)
	pg, err := postgres.Open(ctx, srv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rep, err := Copy(ctx, orig, pg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 31 || rep.Skipped != 0 || rep.Source.Deleted != 1 || rep.Source.Events != 30 {
		t.Fatalf("report %+v", rep)
	}
	back := openEmbedded(t)
	if _, err := Copy(ctx, pg, back, Options{}); err != nil {
		t.Fatal(err)
	}
	sameLog(t, orig, back)
	a, _ := Summarise(ctx, orig, 0)
	b, _ := Summarise(ctx, back, 0)
	if a.SHA256 != b.SHA256 {
		t.Fatalf("summaries differ: %v", a.Diff(b))
	}
	if _, err := back.Append(ctx, events.SessionStream("s1"), events.Any, storetest.Event("s1", "x")); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("the deleted stream can be written after the round trip: %v", err)
	}
	// Running it again finds everything copied and writes nothing.
	again, err := Copy(ctx, orig, pg, Options{})
	if err != nil || again.Copied != 0 || again.Skipped != 31 {
		t.Fatalf("second copy: %+v %v", again, err)
	}
}

// TestResumeAfterInterruption stops a copy after its first append and runs
// it again: the copied start is checked and skipped, the rest copied.
func TestResumeAfterInterruption(t *testing.T) {
	src, dst := openEmbedded(t), openEmbedded(t)
	seed(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Copy(ctx, src, dst, Options{OnBatch: func(n int) {
		if n >= 10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted copy: %v", err)
	}
	part, _ := dst.ReadAll(context.Background(), 0, 1000)
	if len(part) < 10 || len(part) >= 31 {
		t.Fatalf("interrupted copy left %d events", len(part))
	}
	rep, err := Copy(context.Background(), src, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != len(part) || rep.Skipped+rep.Copied != 31 {
		t.Fatalf("resumed: skipped %d copied %d after %d", rep.Skipped, rep.Copied, len(part))
	}
	sameLog(t, src, dst)
}

// TestConflictingTargetRefused: a target holding other events is refused
// and left as it was.
func TestConflictingTargetRefused(t *testing.T) {
	ctx := context.Background()
	src := openEmbedded(t)
	seed(t, src)
	for _, tc := range []struct {
		name string
		fill func(events.Store)
	}{
		{"other events", func(s events.Store) {
			s.Append(ctx, "elsewhere", events.Any, storetest.Event("x", "mine"))
		}},
		{"same stream other ids", func(s events.Store) {
			s.Append(ctx, events.SessionStream("s0"), events.Any, storetest.Event("s0", "0"))
		}},
		{"more than the source", func(s events.Store) {
			if _, err := Copy(ctx, src, s, Options{}); err != nil {
				t.Fatal(err)
			}
			s.Append(ctx, "extra", events.Any, storetest.Event("x", "more"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := openEmbedded(t)
			tc.fill(dst)
			before, _ := dst.ReadAll(ctx, 0, 1000)
			_, err := Copy(ctx, src, dst, Options{})
			var np *NotPrefixError
			if !errors.As(err, &np) || !IsRefusal(err) {
				t.Fatalf("copy into a conflicting target: %v", err)
			}
			after, _ := dst.ReadAll(ctx, 0, 1000)
			if len(after) != len(before) {
				t.Fatalf("a refused copy wrote %d events", len(after)-len(before))
			}
		})
	}
}

// TestMismatchDetected: Summarise tells logs apart by a single payload.
func TestMismatchDetected(t *testing.T) {
	ctx := context.Background()
	a, b := openEmbedded(t), openEmbedded(t)
	e := storetest.Event("s", "one")
	f := e
	f.Payload = []byte(`{"content":"two"}`)
	a.Append(ctx, "s", events.Any, e)
	b.Append(ctx, "s", events.Any, f)
	x, _ := Summarise(ctx, a, 0)
	y, _ := Summarise(ctx, b, 0)
	if d := x.Diff(y); len(d) != 1 || x.SHA256 == y.SHA256 {
		t.Fatalf("diff %v", d)
	}
}
