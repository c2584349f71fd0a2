package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/schema"
)

// server is the one PostgreSQL the package's tests share (nil: none).
var server *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv("HERMES_LOCK_CHILD") != "" {
		lockChild() // TestLocksKill9's child: no server of its own
	}
	s, err := pgtest.Launch()
	if err != nil && !errors.Is(err, pgtest.ErrUnavailable) {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

func openTemp(t testing.TB, opts ...Option) *Store {
	t.Helper()
	if server == nil {
		pgtest.Unavailable(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, server.Database(t), append([]Option{WithPollInterval(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	var dsns sync.Map // *Store → the DSN of its database
	open := func(t *testing.T, dsn string) events.Store {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := Open(ctx, dsn, WithPollInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		dsns.Store(s, dsn)
		return s
	}
	storetest.Run(t, func(t *testing.T) events.Store { return open(t, server.Database(t)) }, storetest.Features{
		// The same database, opened again: after a restart, or beside the
		// first store as another process would.
		Reopen: func(t *testing.T, s events.Store) events.Store {
			dsn, _ := dsns.Load(s)
			return open(t, dsn.(string))
		},
		Shared: true,
	})
}

// TestOpenIsIdempotent opens the same database twice, concurrently: the
// tables are created once and both stores share them.
func TestOpenIsIdempotent(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	dsn := server.Database(t)
	ctx := context.Background()
	stores := make([]*Store, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(ctx, dsn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	if _, err := stores[0].Append(ctx, "s", events.NoStream, storetest.Event("s", "x")); err != nil {
		t.Fatal(err)
	}
	rs, err := stores[3].ReadStream(ctx, "s", events.Forward, 0, 0)
	if err != nil || len(rs) != 1 {
		t.Fatalf("second store reads %d events, %v", len(rs), err)
	}
	// One log, one identity; another database is another log.
	a, _ := stores[0].LogID(ctx)
	b, _ := stores[3].LogID(ctx)
	other, _ := openTemp(t).LogID(ctx)
	if a == "" || a != b || other == a {
		t.Fatalf("log ids %q %q, other database %q", a, b, other)
	}
}

// gapCheck runs writers that pause inside their transactions, after their
// positions are taken, while a subscriber follows the log; it returns how
// many events the subscriber missed and how often it saw a position go
// backwards. The writers are spread over several stores on the same
// database, as over several processes: each store groups its own writers'
// appends, and the stores race each other for positions.
func gapCheck(t *testing.T, trap bool) (missed, disorder int) {
	dsn := server.Database(t)
	var ss []*Store
	for range 4 {
		s, err := Open(context.Background(), dsn, WithPollInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.trap = trap
		s.hold = func(ctx context.Context) {
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
		}
		ss = append(ss, s)
	}
	s := ss[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const writers, each = 16, 20
	var mu sync.Mutex
	seen := map[string]int{}
	var last uint64
	sctx, stop := context.WithCancel(ctx)
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
				if _, err := ss[w%len(ss)].Append(ctx, fmt.Sprintf("w%d", w), events.Any, storetest.Event("w", fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The subscriber has caught up when it has delivered the head.
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		l := last
		mu.Unlock()
		if l >= head {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("subscriber stalled at %d of %d", l, head)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-done
	all, err := s.ReadAll(ctx, 0, 100000)
	if err != nil || len(all) != writers*each {
		t.Fatalf("log holds %d events (%v), want %d", len(all), err, writers*each)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range all {
		switch seen[r.ID] {
		case 0:
			missed++
		case 1:
		default:
			t.Fatalf("event at %d delivered %d times", r.Position, seen[r.ID])
		}
	}
	return missed, disorder
}

// TestSubscriberSeesEveryEventUnderConcurrentWriters is the gap-free
// ordering guarantee: with many writers that stall inside their
// transactions, a subscriber still sees every event once, in order.
func TestSubscriberSeesEveryEventUnderConcurrentWriters(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	missed, disorder := gapCheck(t, false)
	if missed != 0 || disorder != 0 {
		t.Fatalf("subscriber missed %d events and saw %d out of order", missed, disorder)
	}
}

// TestGapCheckCatchesTheSequenceTrap runs the same check against positions
// taken outside the transaction, as from a sequence: the check must see
// the subscriber miss events, or it could not tell the counter works.
func TestGapCheckCatchesTheSequenceTrap(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	missed, _ := gapCheck(t, true)
	if missed == 0 {
		t.Fatal("with positions taken outside the transaction the subscriber missed nothing: the check cannot tell")
	}
	t.Logf("sequence-like positions: subscriber missed %d of 320 events", missed)
}

// TestSubscribeSurvivesLostConnection kills the subscription's listening
// connection: it keeps delivering, by polling and then listening again.
func TestSubscribeSurvivesLostConnection(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan events.Recorded, 100)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.SubscribeAll(sctx, 0, func(r events.Recorded) error { got <- r; return nil })
	next := func(want string) {
		t.Helper()
		select {
		case r := <-got:
			if r.Stream != want {
				t.Fatalf("got event of %s, want %s", r.Stream, want)
			}
		case <-ctx.Done():
			t.Fatalf("event of %s not delivered", want)
		}
	}
	if _, err := s.Append(ctx, "before", events.Any, storetest.Event("a", "1")); err != nil {
		t.Fatal(err)
	}
	next("before")
	// Terminate every other backend listening on our channel.
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`).Scan(&n)
	if err != nil || n == 0 {
		t.Fatalf("terminated %d listening connections: %v", n, err)
	}
	if _, err := s.Append(ctx, "after", events.Any, storetest.Event("a", "2")); err != nil {
		t.Fatal(err)
	}
	next("after")
	if _, err := s.Append(ctx, "later", events.Any, storetest.Event("a", "3")); err != nil {
		t.Fatal(err)
	}
	next("later")
}

// TestBadDSNDoesNotLeakPassword: an unparsable DSN's error leaves out the
// password.
func TestBadDSNDoesNotLeakPassword(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v", err)
	}
}

// TestNewerSchemaRefused: tables of a newer Hermes are not written by an
// older one.
func TestNewerSchemaRefused(t *testing.T) {
	if server == nil {
		pgtest.Unavailable(t)
	}
	dsn := server.Database(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE hermes_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer than this Hermes knows") {
		t.Fatalf("open of newer tables: %v", err)
	}
}

// TestSubscribeSurvivesServerRestart restarts PostgreSQL under a live
// subscription: it keeps trying, and delivers what is appended after the
// server is back, with nothing missed or repeated.
func TestSubscribeSurvivesServerRestart(t *testing.T) {
	if os.Getenv("HERMES_PG_URL") != "" {
		t.Skip("HERMES_PG_URL names a server this test may not restart")
	}
	s := openTemp(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan events.Recorded, 100)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.SubscribeAll(sctx, 0, func(r events.Recorded) error { got <- r; return nil }) }()
	next := func(want string) {
		t.Helper()
		select {
		case r := <-got:
			if r.Stream != want {
				t.Fatalf("got event of %s, want %s", r.Stream, want)
			}
		case err := <-done:
			t.Fatalf("subscription ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("event of %s not delivered", want)
		}
	}
	if _, err := s.Append(ctx, "before", events.Any, storetest.Event("a", "1")); err != nil {
		t.Fatal(err)
	}
	next("before")
	if err := server.Restart(); err != nil {
		t.Fatal(err)
	}
	// The pool finds its connections broken; appends work again once it
	// has new ones.
	for {
		_, err := s.Append(ctx, "after", events.Any, storetest.Event("a", "2"))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("append after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	next("after")
	select {
	case r := <-got:
		t.Fatalf("extra delivery of %s@%d", r.Stream, r.Revision)
	default:
	}
}

// TestGroupChecksEveryStream writes one group (one transaction) of appends
// to several streams — new, existing, deleted, and one stream twice — and
// each append is checked against its own stream's state as the group
// leaves it: the states read in one statement are each stream's.
func TestGroupChecksEveryStream(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, st := range []string{"b", "c", "d"} {
		if _, err := s.Append(ctx, st, events.NoStream, storetest.Event(st, "x"), storetest.Event(st, "y")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteStream(ctx, "d", events.Any); err != nil {
		t.Fatal(err)
	}
	req := func(stream string, exp events.Expected) *request {
		return &request{ctx: ctx, stream: stream, expected: exp, evs: []schema.Envelope{storetest.Event(stream, "z")}, reply: make(chan reply, 1)}
	}
	group := []*request{
		req("a", events.NoStream), // new
		req("b", events.Exact(1)), // right
		req("c", events.Exact(0)), // wrong: c is at 1
		req("d", events.Any),      // deleted
		req("a", events.Exact(0)), // a as the first append left it
		req("e", events.StreamExists),
	}
	s.commit(group)
	got := make([]reply, len(group))
	for i, r := range group {
		got[i] = <-r.reply
	}
	if got[0].err != nil || got[0].res.NextRevision != 0 {
		t.Errorf("new stream a: %+v", got[0])
	}
	if got[1].err != nil || got[1].res.NextRevision != 2 {
		t.Errorf("b at 1: %+v", got[1])
	}
	var wrong *events.WrongExpectedVersionError
	if !errors.As(got[2].err, &wrong) || wrong.Actual != 1 {
		t.Errorf("c expected at 0 (is at 1): %+v", got[2])
	}
	if !errors.Is(got[3].err, events.ErrStreamDeleted) {
		t.Errorf("deleted d: %+v", got[3])
	}
	if got[4].err != nil || got[4].res.NextRevision != 1 {
		t.Errorf("a again: %+v", got[4])
	}
	if !errors.As(got[5].err, &wrong) || wrong.Exists {
		t.Errorf("e must exist (does not): %+v", got[5])
	}
	for st, n := range map[string]int{"a": 2, "b": 3, "c": 2} {
		rs, err := s.ReadStream(ctx, st, events.Forward, 0, 0)
		if err != nil || len(rs) != n {
			t.Errorf("%s: %d events, %v; want %d", st, len(rs), err, n)
		}
	}
}

// TestEmptyReadsOfDeletedAndMissingStreams: a read that finds nothing
// tells a deleted stream from one never written, whether it read the whole
// stream (no second statement) or part of it.
func TestEmptyReadsOfDeletedAndMissingStreams(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, "gone", events.NoStream, storetest.Event("gone", "x"), storetest.Event("gone", "y")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, "gone", events.Any); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  events.Direction
		from uint64
	}{{events.Forward, 0}, {events.Forward, 7}, {events.Backward, events.End}, {events.Backward, 0}} {
		if _, err := s.ReadStream(ctx, "gone", c.dir, c.from, 1); !errors.Is(err, events.ErrStreamDeleted) {
			t.Errorf("deleted stream, %v from %d: %v", c.dir, c.from, err)
		}
		if rs, err := s.ReadStream(ctx, "never", c.dir, c.from, 1); err != nil || len(rs) != 0 {
			t.Errorf("missing stream, %v from %d: %d events, %v", c.dir, c.from, len(rs), err)
		}
	}
}

// TestSubscribeSettles: a subscription with events.WithSettle reads a
// burst of commits once, the wait after the first one's notification: its
// handler sees the burst together, no sooner than the settle after the
// first commit. Without it, the first event comes at once.
func TestSubscribeSettles(t *testing.T) {
	s := openTemp(t, WithPollInterval(time.Minute))
	const settle = 400 * time.Millisecond
	for _, d := range []time.Duration{0, settle} {
		t.Run(fmt.Sprint("settle ", d), func(t *testing.T) {
			stream := fmt.Sprint("burst-", d.Milliseconds())
			head, err := s.Head(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if d > 0 {
				ctx = events.WithSettle(ctx, d)
			}
			var mu sync.Mutex
			var at []time.Time
			done := make(chan error, 1)
			go func() {
				done <- s.SubscribeAll(ctx, head, func(events.Recorded) error {
					mu.Lock()
					at = append(at, time.Now())
					mu.Unlock()
					return nil
				})
			}()
			time.Sleep(300 * time.Millisecond) // listening, caught up
			start := time.Now()
			const n = 6
			for i := range n {
				if _, err := s.Append(context.Background(), stream, events.Any, storetest.Event(stream, "x")); err != nil {
					t.Fatal(err)
				}
				if i < n-1 {
					time.Sleep(20 * time.Millisecond)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				got := len(at)
				mu.Unlock()
				if got == n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d events delivered", got, n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			first, spread := at[0].Sub(start), at[n-1].Sub(at[0])
			mu.Unlock()
			if d == 0 && first > settle/2 {
				t.Errorf("without a settle the first event came after %s", first)
			}
			if d > 0 && (first < d*9/10 || spread > 50*time.Millisecond) {
				t.Errorf("settle %s: the first event came after %s, the last %s after it; want one read after the settle", d, first, spread)
			}
			cancel()
			<-done
		})
	}
}
