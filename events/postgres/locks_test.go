package postgres

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestLocksExclusive(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a, b := s.Locks("node-a pid 1"), s.Locks("node-b pid 2")
	defer a.Close()
	defer b.Close()

	la, err := a.TryLock(ctx, "session:s1")
	if err != nil {
		t.Fatal(err)
	}
	if la.Previous() != "" {
		t.Fatalf("a fresh lock names a previous owner %q", la.Previous())
	}
	_, err = b.TryLock(ctx, "session:s1")
	var le *LockedError
	if !errors.As(err, &le) || le.Owner != "node-a pid 1" {
		t.Fatalf("second holder: %v, want a LockedError naming node-a", err)
	}
	// The same process asking twice is refused too: one holder per name.
	if _, err := a.TryLock(ctx, "session:s1"); !errors.As(err, &le) {
		t.Fatalf("taking a held lock again: %v", err)
	}
	// Another name is independent.
	if _, err := b.TryLock(ctx, "session:s2"); err != nil {
		t.Fatal(err)
	}
	hs, err := s.Holders(ctx, "session:")
	if err != nil || len(hs) != 2 || !hs[0].Live || hs[0].Owner != "node-a pid 1" || hs[1].Owner != "node-b pid 2" {
		t.Fatalf("holders: %+v %v", hs, err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("a released lock is not reported as no longer held")
	}
	lb, err := b.TryLock(ctx, "session:s1")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if lb.Previous() != "" {
		t.Fatalf("a cleanly released lock names a previous owner %q", lb.Previous())
	}
}

// TestLocksLostConnection cuts the connection holding a lock from the
// server's side: the holder is told at once, and another process takes it.
func TestLocksLostConnection(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a, b := s.locks("a", 50*time.Millisecond, idleTimeout), s.Locks("b")
	defer a.Close()
	defer b.Close()
	la, err := a.TryLock(ctx, "projection:costs")
	if err != nil {
		t.Fatal(err)
	}
	k := uint64(LockKey("projection:costs"))
	if _, err := s.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the holder was not told its connection (and lock) was lost")
	}
	lb, err := b.TryLock(ctx, "projection:costs")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Previous() != "a" {
		t.Fatalf("taken over from %q, want a (which never released)", lb.Previous())
	}
	// The process that lost it can take locks again on a new connection.
	if _, err := a.TryLock(ctx, "projection:history"); err != nil {
		t.Fatal(err)
	}
}

// TestLocksKill9 holds a lock in a child process and kills it with
// SIGKILL: the lock is free at once for the next holder, which learns who
// left it.
func TestLocksKill9(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	cfg := s.pool.Config().ConnConfig
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLocksKill9$")
	cmd.Env = append(os.Environ(), "HERMES_LOCK_CHILD="+connString(cfg))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	held := false
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "HELD" {
			held = true
			break
		}
	}
	if !held {
		t.Fatal("the child never took the lock")
	}
	b := s.Locks("survivor")
	defer b.Close()
	var le *LockedError
	if _, err := b.TryLock(ctx, "session:kill"); !errors.As(err, &le) || le.Owner != "child" {
		t.Fatalf("while the child lives: %v", err)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lk, err := b.TryLock(ctx, "session:kill")
		if err == nil {
			if lk.Previous() != "child" {
				t.Fatalf("taken over from %q, want child", lk.Previous())
			}
			break
		}
		if !errors.As(err, &le) || time.Now().After(deadline) {
			t.Fatalf("after kill -9: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connString(cfg *pgx.ConnConfig) string { return cfg.ConnString() }

// lockChild is the child process of TestLocksKill9: it takes the lock,
// says so and waits to be killed.
func lockChild() {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("HERMES_LOCK_CHILD"))
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	if _, err := s.Locks("child").TryLock(ctx, "session:kill"); err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	os.Stdout.WriteString("HELD\n")
	time.Sleep(time.Hour)
}

// TestLocksBrokenBeforeTheWatcher: the connection breaks and the next
// TryLock finds out before the watcher does. The locks it held are
// reported lost (not kept as held on a new connection that holds
// nothing), the new lock is taken on a new connection, and the lost one
// can be taken again.
func TestLocksBrokenBeforeTheWatcher(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a := s.locks("a", time.Hour, idleTimeout) // the watcher never looks
	defer a.Close()
	la, err := a.TryLock(ctx, "session:x")
	if err != nil {
		t.Fatal(err)
	}
	k := uint64(LockKey("session:x"))
	if _, err := s.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TryLock(ctx, "session:y"); err != nil {
		t.Fatalf("a lock after the connection broke: %v", err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("the lock the broken connection held is not reported lost")
	}
	if _, err := a.TryLock(ctx, "session:x"); err != nil {
		t.Fatalf("taking the lost lock again: %v", err)
	}
}

// TestLocksFrozenHolder: a holder that stops talking to the server (its
// watcher does not ping: frozen) loses its locks to the server's idle
// timeout, and another process takes them.
func TestLocksFrozenHolder(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	frozen := s.locks("frozen", time.Hour, 300*time.Millisecond)
	defer frozen.Close()
	if _, err := frozen.TryLock(ctx, "projection:costs"); err != nil {
		t.Fatal(err)
	}
	b := s.Locks("b")
	defer b.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lk, err := b.TryLock(ctx, "projection:costs")
		if err == nil {
			if lk.Previous() != "frozen" {
				t.Fatalf("taken over from %q", lk.Previous())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the frozen holder kept its lock: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTryLockOneStatement: taking a lock on the lock connection is one
// statement (one round trip, one transaction), whether the lock is free,
// held by another process, or left recorded by a holder that ended
// without releasing it, and each says what it should of the owner;
// releasing one is one statement too.
func TestTryLockOneStatement(t *testing.T) {
	st := &statements{}
	s := openTemp(t, withTracer(st))
	ctx := context.Background()
	a, b := s.Locks("a"), s.Locks("b")
	defer a.Close()
	defer b.Close()
	// Connected first: the connection's setup is not the lock's.
	if _, err := a.TryLock(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "warm-b"); err != nil {
		t.Fatal(err)
	}
	one := func(what string, f func()) {
		t.Helper()
		n := st.count()
		f()
		if got := st.since(n); len(got) != 1 {
			t.Errorf("%s: %d statements, want 1: %q", what, len(got), got)
		}
	}
	var la *Lock
	one("a free lock", func() {
		var err error
		if la, err = a.TryLock(ctx, "session:x"); err != nil || la.Previous() != "" {
			t.Fatalf("free lock: %v, previous %q", err, la.Previous())
		}
	})
	one("a lock held elsewhere", func() {
		var le *LockedError
		if _, err := b.TryLock(ctx, "session:x"); !errors.As(err, &le) || le.Owner != "a" {
			t.Fatalf("held lock: %v, want a LockedError naming a", err)
		}
	})
	// A holder that ends without releasing leaves its record: the next
	// holder names it.
	if _, err := s.pool.Exec(ctx, `INSERT INTO hermes_locks (name, owner) VALUES ('session:y', 'gone')`); err != nil {
		t.Fatal(err)
	}
	one("a lock left recorded", func() {
		lb, err := b.TryLock(ctx, "session:y")
		if err != nil || lb.Previous() != "gone" {
			t.Fatalf("left lock: %v, previous %q, want gone", err, lb.Previous())
		}
	})
	hs, err := s.Holders(ctx, "session:")
	if err != nil || len(hs) != 2 || hs[0].Owner != "a" || !hs[0].Live || hs[1].Owner != "b" || !hs[1].Live {
		t.Fatalf("holders: %+v %v", hs, err)
	}
	one("a release", func() {
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// Released cleanly: the next holder finds no record to take over.
	lb, err := b.TryLock(ctx, "session:x")
	if err != nil || lb.Previous() != "" {
		t.Fatalf("after a release: %v, previous %q", err, lb.Previous())
	}
}
