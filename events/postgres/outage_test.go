package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/schema"
)

func envs(t testing.TB, n int) []schema.Envelope {
	t.Helper()
	out := make([]schema.Envelope, n)
	for i := range out {
		e, err := schema.NewEnvelope(schema.Meta{SessionID: "s"}, schema.UserMessageAdded{Content: fmt.Sprint("m", i)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e
	}
	return out
}

// TestAppendLostAcknowledgement: an append the server committed but did
// not acknowledge (the connection broke after the commit) is answered as
// written, with its revision, and the stream's writer goes on from there;
// the events are in the stream once. Without the look-up (no outage wait)
// the writer hears an error and its next append, from the revision it
// knows, conflicts: the failure this prevents.
func TestAppendLostAcknowledgement(t *testing.T) {
	for _, wait := range []time.Duration{DefaultOutageWait, 0} {
		t.Run(fmt.Sprint("wait=", wait), func(t *testing.T) {
			s := openTemp(t, WithOutageWait(wait))
			ctx := context.Background()
			stream := "session-" + uuid.NewString()
			res, err := s.Append(ctx, stream, events.NoStream, envs(t, 2)...)
			if err != nil {
				t.Fatal(err)
			}
			var lose atomic.Bool
			lose.Store(true)
			s.lostAck = func() bool { return lose.Swap(false) }
			got, err := s.Append(ctx, stream, events.Exact(res.NextRevision), envs(t, 3)...)
			if wait == 0 {
				if err == nil {
					t.Fatal("no outage wait: a lost acknowledgement is an error")
				}
				_, err = s.Append(ctx, stream, events.Exact(res.NextRevision+0), envs(t, 1)...)
				var wrong *events.WrongExpectedVersionError
				if !errors.As(err, &wrong) {
					t.Fatalf("the next append from the revision known: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("an append committed but not acknowledged: %v", err)
			}
			if got.NextRevision != res.NextRevision+3 {
				t.Fatalf("revision %d, want %d", got.NextRevision, res.NextRevision+3)
			}
			if _, err := s.Append(ctx, stream, events.Exact(got.NextRevision), envs(t, 1)...); err != nil {
				t.Fatalf("the next append: %v", err)
			}
			rs, err := s.ReadStream(ctx, stream, events.Forward, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 6 {
				t.Fatalf("%d events in the stream, want 6", len(rs))
			}
		})
	}
}

// TestAppendsSurviveRestart: single writers appending to their own
// streams while the server is restarted hard (pg_ctl restart -m
// immediate, every connection killed, commits in flight unacknowledged)
// see every append succeed, each once, in order, with no conflict: the
// store waits the restart out and settles the appends whose outcome the
// crash left unknown.
func TestAppendsSurviveRestart(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, srv.Database(t), WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const writers = 8
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		counts [writers]int
		errs   = make(chan error, writers)
	)
	streams := make([]string, writers)
	for w := range writers {
		streams[w] = "session-" + uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp := events.NoStream
			for !stop.Load() {
				res, err := s.Append(ctx, streams[w], exp, envs(t, 2)...)
				if err != nil {
					errs <- fmt.Errorf("writer %d, append %d: %w", w, counts[w], err)
					return
				}
				counts[w]++
				exp = events.Exact(res.NextRevision)
				if _, err := s.ReadStream(ctx, streams[w], events.Backward, res.NextRevision, 1); err != nil {
					errs <- fmt.Errorf("writer %d, read: %w", w, err)
					return
				}
			}
		}()
	}
	for range 2 {
		time.Sleep(500 * time.Millisecond)
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w, stream := range streams {
		rs, err := s.ReadStream(ctx, stream, events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2*counts[w] {
			t.Errorf("writer %d: %d events for %d appends of 2", w, len(rs), counts[w])
		}
		seen := map[string]bool{}
		for i, r := range rs {
			if r.Revision != uint64(i) || seen[r.ID] {
				t.Fatalf("writer %d: event %d at revision %d (seen before: %v)", w, i, r.Revision, seen[r.ID])
			}
			seen[r.ID] = true
		}
	}
	t.Logf("appends per writer: %v", counts)
}

// TestTryLockWaitsOutRestart: locks taken one after another while the
// server is restarted hard are all taken — a session started during a
// restart waits it out as an append does, instead of failing its turn with
// "the database system is shutting down" — and the one taken after the
// restart is held: another process is refused it.
func TestTryLockWaitsOutRestart(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, srv.Database(t), WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, b := s.Locks("a"), s.Locks("b")
	defer a.Close()
	defer b.Close()
	if _, err := a.TryLock(ctx, "session:warm"); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart() }()
	taken := 0
	for done := false; !done; {
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
		name := fmt.Sprint("session:", taken)
		if _, err := a.TryLock(ctx, name); err != nil {
			t.Fatalf("lock %d, during the restart: %v", taken, err)
		}
		taken++
	}
	last := fmt.Sprint("session:", taken)
	if _, err := a.TryLock(ctx, last); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	var le *LockedError
	if _, err := b.TryLock(ctx, last); !errors.As(err, &le) || le.Owner != "a" {
		t.Fatalf("another process took %s held since the restart: %v", last, err)
	}
	t.Logf("%d locks taken while the server restarted", taken)
}
