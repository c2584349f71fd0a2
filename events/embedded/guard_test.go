package embedded

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/internal/sqlite"
)

// acked is what a test saw acknowledged: each payload text by position.
type acked map[uint64]string

func appendAcked(t *testing.T, s *Store, stream string, n int, got acked) {
	t.Helper()
	for i := range n {
		text := fmt.Sprintf("%s-%d-%d", stream, len(got), i)
		res, err := s.Append(context.Background(), stream, events.Any, storetest.Event("x", text))
		if err != nil {
			t.Fatalf("append %s: %v", text, err)
		}
		got[res.Position] = text
	}
}

// holdsAll checks that the log in file path holds every acknowledged event.
func holdsAll(t *testing.T, path string, want acked) {
	t.Helper()
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	rs, err := s.ReadAll(context.Background(), 0, 1_000_000)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	have := map[uint64]string{}
	for _, r := range rs {
		var p struct{ Content string }
		json.Unmarshal(r.Payload, &p)
		have[r.Position] = p.Content
	}
	for pos, text := range want {
		if have[pos] != text {
			t.Fatalf("%s: position %d holds %q, want the acknowledged %q", filepath.Base(path), pos, have[pos], text)
		}
	}
}

func lostErr(t *testing.T, err error, what string) *events.LogLostError {
	t.Helper()
	var le *events.LogLostError
	if !errors.Is(err, events.ErrLogLost) || !errors.As(err, &le) {
		t.Fatalf("want a lost log (%s), got %v", what, err)
	}
	if !strings.Contains(le.What, what) {
		t.Fatalf("the loss says %q, want it to say %q", le.What, what)
	}
	return le
}

// emptyLog makes another, empty store's file at path.
func emptyLog(t *testing.T, path string) {
	t.Helper()
	e, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// tamper does to the home's events.db what an attacker with a shell did.
func tamper(t *testing.T, how, path string) {
	t.Helper()
	switch how {
	case "rm":
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	case "rm-wal":
		if err := os.Remove(path + "-wal"); err != nil {
			t.Fatal(err)
		}
	case "replace":
		other := filepath.Join(t.TempDir(), "events.db")
		emptyLog(t, other)
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
	case "truncate", "truncate-checkpointed":
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no tampering %q", how)
	}
}

// TestLogLostUnderARunningStore deletes, replaces or truncates events.db
// (or deletes its write-ahead log) under an open store: the next append
// fails with the lost log and so does every one after it; nothing
// acknowledged before is lost (the store saves what its open files still
// hold, where they hold it); and the next open refuses rather than start a
// new log, unless the file left holds every acknowledged event.
func TestLogLostUnderARunningStore(t *testing.T) {
	for _, c := range []struct{ how, what string }{
		{"rm", "deleted"},
		{"rm-wal", "write-ahead log"},
		{"replace", "replaced"},
		{"truncate", "truncated"},
		{"truncate-checkpointed", "truncated"},
	} {
		t.Run(c.how, func(t *testing.T) {
			dir := t.TempDir()
			path, wit := filepath.Join(dir, "events.db"), filepath.Join(dir, "store-witness.json")
			// The watcher is slowed down: the append must find the loss.
			s, err := Open(path, WithWitness(wit), WithGuardInterval(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			got := acked{}
			appendAcked(t, s, "session-a", 20, got)
			appendAcked(t, s, "session-b", 20, got)
			if c.how == "truncate-checkpointed" {
				if _, err := s.wconn.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					t.Fatal(err)
				}
			}
			tamper(t, c.how, path)

			_, err = s.Append(context.Background(), "session-a", events.Any, storetest.Event("x", "after"))
			le := lostErr(t, err, c.what)
			if le.Log != s.Identity().ID || le.Position != 40 {
				t.Fatalf("the loss names log %s up to %d, want %s up to 40", le.Log, le.Position, s.Identity().ID)
			}
			if _, err := s.Append(context.Background(), "session-c", events.NoStream, storetest.Event("x", "later")); !errors.Is(err, events.ErrLogLost) {
				t.Fatalf("a later append: %v", err)
			}
			if _, err := s.ReadAll(context.Background(), 0, 10); !errors.Is(err, events.ErrLogLost) {
				t.Fatalf("a read after the loss: %v", err)
			}
			if rep, err := s.Verify(context.Background()); err != nil || !rep.Damaged() || rep.Problems[0].Kind != "lost" {
				t.Fatalf("verify after the loss: %v %+v", err, rep)
			}
			if c.how == "truncate-checkpointed" {
				// The rows were in the part cut off: nothing can copy them.
				if le.Rescued != "" || le.RescueErr == "" {
					t.Fatalf("rescued %q (%s) from a truncated file", le.Rescued, le.RescueErr)
				}
			} else {
				if le.Rescued == "" || le.RescuedUpTo != 40 {
					t.Fatalf("nothing rescued: %+v", le)
				}
				holdsAll(t, le.Rescued, got)
				if !strings.Contains(err.Error(), le.Rescued) || !strings.Contains(err.Error(), "hermes store verify") {
					t.Fatalf("the error does not say what to do: %v", err)
				}
			}
			s.Close()

			s2, err := Open(path, WithWitness(wit))
			if err == nil {
				// What SQLite reads at the path now still holds the whole
				// log: closing the last connection wrote the write-ahead
				// log into events.db (rm-wal, truncate), or the
				// write-ahead log left beside the replacement holds every
				// page of it (replace).
				if c.how == "rm" || c.how == "truncate-checkpointed" {
					t.Fatalf("reopened after %s", c.how)
				}
				s2.Close()
				holdsAll(t, path, got)
				return
			}
			lostErr(t, err, "")
			if _, serr := os.Stat(path); c.how == "rm" && serr == nil {
				t.Fatalf("the refused open created %s", path)
			}
		})
	}
}

// TestLogLostFoundWhileIdle: a store that is not writing finds the loss
// by itself, and saves the log before the process might end.
func TestLogLostFoundWhileIdle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	s, err := Open(path, WithGuardInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := acked{}
	appendAcked(t, s, "session-a", 5, got)
	tamper(t, "rm", path)
	deadline := time.Now().Add(10 * time.Second)
	for s.Lost() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the loss was not noticed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var le *events.LogLostError
	if !errors.As(s.Lost(), &le) || le.Rescued == "" {
		t.Fatalf("lost: %v", s.Lost())
	}
	holdsAll(t, le.Rescued, got)
}

// TestLogChangedInside: the file stays, but what it holds is another log,
// or a log whose last position went back.
func TestLogChangedInside(t *testing.T) {
	for _, c := range []struct{ name, sql, what string }{
		{"other id", `UPDATE meta SET value = 'someone-else' WHERE key = 'log_id'`, "another log"},
		{"went back", `DELETE FROM events WHERE position > 3; UPDATE sqlite_sequence SET seq = 3 WHERE name = 'events'`, "went back from position 10 to 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s, err := Open(path, WithGuardInterval(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			appendAcked(t, s, "session-a", 10, acked{})
			raw, err := sql.Open("sqlite", sqlite.DSN(path, "", "FULL"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			_, err = s.Append(context.Background(), "session-a", events.Any, storetest.Event("x", "after"))
			lostErr(t, err, c.what)
		})
	}
}

// TestWitnessAcrossRestarts: what the witness (and the home's other
// records) remember is checked at open.
func TestWitnessAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, wit := filepath.Join(dir, "events.db"), filepath.Join(dir, "store-witness.json")

	// A new home opens, and its witness records the log.
	s, err := Open(path, WithWitness(wit))
	if err != nil {
		t.Fatalf("a new home: %v", err)
	}
	id := s.Identity().ID
	got := acked{}
	appendAcked(t, s, "session-a", 5, got)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := s.wconn.ExecContext(context.Background(), `VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	appendAcked(t, s, "session-b", 5, acked{})
	// A deleted session is no loss.
	if err := s.DeleteStream(ctx, "session-b", events.Any); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := readWitness(wit)
	if err != nil || w == nil || w.Log != id || w.Position != 11 {
		t.Fatalf("witness after close: %+v %v", w, err)
	}
	if s, err = Open(path, WithWitness(wit)); err != nil {
		t.Fatalf("reopen after a deletion: %v", err)
	}
	s.Close()

	// Deleted while nothing had it open.
	moved := filepath.Join(t.TempDir(), "events.db")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	_, err = Open(path, WithWitness(wit))
	if le := lostErr(t, err, "is missing"); le.Source != wit || le.Position != 11 || le.Log != id {
		t.Fatalf("the loss: %+v", le)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the refused open created events.db")
	}
	_, err = OpenReadOnly(path, WithWitness(wit))
	lostErr(t, err, "is missing")
	// An empty file in its place.
	os.WriteFile(path, nil, 0o600)
	_, err = Open(path, WithWitness(wit))
	lostErr(t, err, "holds no event log")
	// Another log in its place.
	os.Remove(path)
	emptyLog(t, path)
	_, err = Open(path, WithWitness(wit))
	lostErr(t, err, "holds another log")
	// An older copy of the same log.
	copyFile(t, backup, path)
	_, err = Open(path, WithWitness(wit))
	lostErr(t, err, "ends at position 5")
	// The whole log back, as another file (a copy): it opens.
	copyFile(t, moved, path)
	if s, err = Open(path, WithWitness(wit)); err != nil {
		t.Fatalf("the log put back: %v", err)
	}
	s.Close()
	holdsAll(t, path, got)

	// Deleted together with the witness: the projections remember it.
	for _, f := range []string{path, path + "-wal", path + "-shm", wit} {
		os.Remove(f)
	}
	proj := func(log string, pos uint64) Option {
		return WithRemembered(func(context.Context) ([]Remembered, error) {
			return []Remembered{{Source: "projections.db", Log: log, Position: pos}}, nil
		})
	}
	_, err = Open(path, WithWitness(wit), proj(id, 11))
	if le := lostErr(t, err, "is missing"); le.Source != "projections.db" {
		t.Fatalf("the loss: %+v", le)
	}
	// An older copy against the projections.
	copyFile(t, backup, path)
	_, err = Open(path, WithWitness(wit), proj(id, 11))
	lostErr(t, err, "ends at position 5")
	// Records of another log (another store used before) do not count
	// against an existing log.
	if s, err = Open(path, WithWitness(wit), proj("another-store", 500)); err != nil {
		t.Fatalf("with records of another log: %v", err)
	}
	s.Close()
	// Taking the older copy on purpose.
	os.Remove(wit)
	_, err = Open(path, WithWitness(wit), proj(id, 11))
	lostErr(t, err, "ends at position 5")
	s, err = Open(path, WithWitness(wit), proj(id, 11), AcceptLog())
	if err != nil {
		t.Fatalf("accepted: %v", err)
	}
	s.Close()
	if w, err := readWitness(wit); err != nil || w.Position != 5 || w.Log != id {
		t.Fatalf("witness after accepting: %+v %v", w, err)
	}

	// A witness that cannot be read stops the open too.
	os.WriteFile(wit, []byte("{"), 0o600)
	if _, err := Open(path, WithWitness(wit)); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("an unreadable witness: %v", err)
	}
}

// TestNewHomeWithWitness: nothing remembered, nothing there: a new log.
func TestNewHomeWithWitness(t *testing.T) {
	dir := t.TempDir()
	path, wit := filepath.Join(dir, "events.db"), filepath.Join(dir, "store-witness.json")
	none := WithRemembered(func(context.Context) ([]Remembered, error) { return nil, nil })
	s, err := Open(path, WithWitness(wit), none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wit); err != nil {
		t.Fatalf("no witness: %v", err)
	}
	s.Close()
	// A home older than witnesses gains one.
	os.Remove(wit)
	if s, err = Open(path, WithWitness(wit), none); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if w, err := readWitness(wit); err != nil || w == nil || w.Log != s.Identity().ID {
		t.Fatalf("witness of an older home: %+v %v", w, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	for _, f := range []string{to, to + "-wal", to + "-shm"} {
		os.Remove(f)
	}
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// guardedHelper is a second process with the store open: it appends what
// stdin asks ("append STREAM N") and answers "ok POSITION TEXT" per event,
// or "lost MESSAGE" / "err MESSAGE"; "close" closes the store.
func guardedHelper(path, wit string) {
	s, err := Open(path, WithWitness(wit), WithGuardInterval(time.Hour))
	if err != nil {
		fmt.Println("err", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch f[0] {
		case "append":
			var n int
			fmt.Sscan(f[2], &n)
			for i := range n {
				text := fmt.Sprintf("helper-%s-%d", f[1], i)
				res, err := s.Append(context.Background(), f[1], events.Any, storetest.Event("x", text))
				switch {
				case errors.Is(err, events.ErrLogLost):
					fmt.Println("lost", strings.ReplaceAll(err.Error(), "\n", " "))
				case err != nil:
					fmt.Println("err", err)
				default:
					fmt.Println("ok", res.Position, text)
				}
				if err != nil {
					break
				}
			}
			fmt.Println("done")
		case "close":
			fmt.Println("closed", s.Close())
			return
		}
	}
}

// TestLogLostUnderTwoProcesses deletes events.db* (or only its write-ahead
// log) while this process and another one have the store open and both
// have appended: each one's next append fails with the lost log, and the
// copies they save hold every event either acknowledged.
func TestLogLostUnderTwoProcesses(t *testing.T) {
	for _, c := range []struct{ how, what string }{{"rm", "deleted"}, {"rm-wal", "write-ahead log"}} {
		t.Run(c.how, func(t *testing.T) {
			dir := t.TempDir()
			path, wit := filepath.Join(dir, "events.db"), filepath.Join(dir, "store-witness.json")
			s, err := Open(path, WithWitness(wit), WithGuardInterval(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cmd := helper(t, "HERMES_HELPER=guarded", "HERMES_DB="+path, "HERMES_WITNESS="+wit)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(stdout)
			next := func() string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("the helper ended: %v", lines.Err())
				}
				return lines.Text()
			}
			if l := next(); l != "ready" {
				t.Fatalf("helper: %s", l)
			}
			got := acked{}
			ask := func(stream string, n int) (lost string) {
				t.Helper()
				fmt.Fprintf(stdin, "append %s %d\n", stream, n)
				for {
					l := next()
					f := strings.SplitN(l, " ", 3)
					switch f[0] {
					case "done":
						return lost
					case "ok":
						var pos uint64
						fmt.Sscan(f[1], &pos)
						got[pos] = f[2]
					case "lost":
						lost = l
					default:
						t.Fatalf("helper: %s", l)
					}
				}
			}
			for range 3 {
				appendAcked(t, s, "session-parent", 5, got)
				if l := ask("session-helper", 5); l != "" {
					t.Fatalf("before the tampering: %s", l)
				}
			}
			tamper(t, c.how, path)
			if l := ask("session-helper", 1); !strings.Contains(l, c.what) {
				t.Fatalf("the other process's append after %s: %q", c.how, l)
			}
			_, err = s.Append(context.Background(), "session-parent", events.Any, storetest.Event("x", "after"))
			le := lostErr(t, err, c.what)
			if le.Rescued == "" {
				t.Fatalf("nothing rescued: %+v", le)
			}
			holdsAll(t, le.Rescued, got)
			fmt.Fprintln(stdin, "close")
			next()
			io.Copy(io.Discard, stdout)
			cmd.Wait()
			rescued, _ := filepath.Glob(filepath.Join(dir, "events-rescued-*.db"))
			if len(rescued) != 2 {
				t.Fatalf("rescued copies: %v", rescued)
			}
			for _, r := range rescued {
				holdsAll(t, r, got)
			}
			s.Close()
			if s2, err := Open(path, WithWitness(wit)); err == nil {
				s2.Close()
				if c.how != "rm-wal" {
					t.Fatalf("reopened after %s", c.how)
				}
				holdsAll(t, path, got)
			} else {
				lostErr(t, err, "")
			}
		})
	}
}

// BenchmarkGuard measures what the guard adds to a write transaction,
// beside baselines of the same run: the look at the files (before and
// after every transaction), and the read of the head that follows a commit
// of another process, now with the log's identity, against the read it
// replaced; and one fsync, which every transaction pays.
func BenchmarkGuard(b *testing.B) {
	s := benchStore(b)
	appendAcked(&testing.T{}, s, "session-bench", 100, acked{})
	b.Run("files", func(b *testing.B) {
		for b.Loop() {
			if err := s.checkFiles(); err != nil {
				b.Fatal(err)
			}
		}
	})
	read := func(q string, dest ...any) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				tx, err := s.wconn.BeginTx(context.Background(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := tx.QueryRow(q).Scan(dest...); err != nil {
					b.Fatal(err)
				}
				tx.Rollback()
			}
		}
	}
	var head int64
	var id sql.NullString
	b.Run("head (before)", read(`SELECT `+allocatedExpr, &head))
	b.Run("head and identity (now)", read(`SELECT (SELECT value FROM meta WHERE key = 'log_id'), `+allocatedExpr, &id, &head))
	b.Run("fsync", BenchmarkRawFsync)
}
