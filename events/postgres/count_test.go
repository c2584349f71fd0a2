package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
)

// statements records the statements the store's connections send, one
// entry per round trip (a pipelined batch is one, listed as batch[…]), for
// tests that a path takes as many as it should.
type statements struct {
	mu  sync.Mutex
	all []string
}

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.all = append(c.all, strings.Join(strings.Fields(d.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var qs []string
	for _, q := range d.Batch.QueuedQueries {
		f := strings.Fields(q.SQL)
		qs = append(qs, strings.Join(f[:min(len(f), 3)], " "))
	}
	c.mu.Lock()
	c.all = append(c.all, "batch["+strings.Join(qs, "; ")+"]")
	c.mu.Unlock()
	return ctx
}

func (c *statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// since returns the statements sent after the first n.
func (c *statements) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.all[n:]...)
}

func (c *statements) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

// withTracer makes the store's connections report their statements to t.
func withTracer(t pgx.QueryTracer) Option { return func(s *Store) { s.tracer = t } }

// TestPartialReadOneStatement: a read of part of a stream is one
// statement, also when it finds nothing (a stream read on from past its
// end, as a session's catch-up after taking its lease does), and still
// tells a deleted stream from one with nothing more.
func TestPartialReadOneStatement(t *testing.T) {
	st := &statements{}
	s := openTemp(t, withTracer(st))
	ctx := context.Background()
	if _, err := s.Append(ctx, "s", events.NoStream, storetest.Event("s", "a"), storetest.Event("s", "b")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  events.Direction
		from uint64
		want int
	}{{events.Forward, 2, 0}, {events.Forward, 1, 1}, {events.Backward, 1, 2}, {events.Forward, 9, 0}} {
		n := st.count()
		rs, err := s.ReadStream(ctx, "s", c.dir, c.from, 0)
		if err != nil || len(rs) != c.want {
			t.Fatalf("%v from %d: %d events, %v; want %d", c.dir, c.from, len(rs), err, c.want)
		}
		if got := st.since(n); len(got) != 1 {
			t.Errorf("%v from %d: %d statements, want 1: %q", c.dir, c.from, len(got), got)
		}
	}
	if err := s.DeleteStream(ctx, "s", events.Any); err != nil {
		t.Fatal(err)
	}
	n := st.count()
	if _, err := s.ReadStream(ctx, "s", events.Forward, 9, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("deleted stream read past its end: %v", err)
	}
	if got := st.since(n); len(got) != 1 {
		t.Errorf("deleted stream read past its end: %d statements, want 1: %q", len(got), got)
	}
}

// TestGroupCommitTwoRoundTrips: an append group is one transaction of two
// round trips — begin, the counter's lock and the streams' state; then the
// rows with the counter (one statement) and the commit — whether it
// appends, deletes a stream or is refused on its expected revision (which
// leaves the counter).
func TestGroupCommitTwoRoundTrips(t *testing.T) {
	st := &statements{}
	s := openTemp(t, withTracer(st))
	ctx := context.Background()
	// The first append of a connection prepares its statements.
	if _, err := s.Append(ctx, "warm", events.NoStream, storetest.Event("warm", "a")); err != nil {
		t.Fatal(err)
	}
	// The second round trip: the rows and the counter's move in one
	// statement, then the commit.
	const write = "batch[WITH ins AS; COMMIT]"
	check := func(what, second string, f func() error) {
		t.Helper()
		n := st.count()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := st.since(n)
		if len(got) != 2 || got[1] != second {
			t.Errorf("%s: round trips %q, want 2, the second %s", what, got, second)
		}
	}
	check("append", write, func() error {
		_, err := s.Append(ctx, "s", events.NoStream, storetest.Event("s", "a"), storetest.Event("s", "b"))
		return err
	})
	check("append again", write, func() error {
		_, err := s.Append(ctx, "s", events.Exact(1), storetest.Event("s", "c"))
		return err
	})
	check("refused append", "batch[COMMIT]", func() error {
		_, err := s.Append(ctx, "s", events.Exact(0), storetest.Event("s", "d"))
		var wrong *events.WrongExpectedVersionError
		if !errors.As(err, &wrong) || wrong.Actual != 2 {
			return fmt.Errorf("append at a stale revision: %v", err)
		}
		return nil
	})
	check("delete", "batch[INSERT INTO hermes_events; DELETE FROM hermes_events; UPDATE hermes_head SET; COMMIT]",
		func() error { return s.DeleteStream(ctx, "s", events.Exact(2)) })
	if _, err := s.ReadStream(ctx, "s", events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("read after delete: %v", err)
	}
	if head, err := s.Head(ctx); err != nil || head != 5 {
		t.Fatalf("head %d (%v), want 5: warm, s×3 erased, tombstone", head, err)
	}
}
