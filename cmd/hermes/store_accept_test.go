package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// homeStore opens home's store as the CLI does (its witness, what
// projections.db remembers), as another hermes process holding it open.
func homeStore(t *testing.T, home string) *embedded.Store {
	t.Helper()
	g := &app.Factory{Log: zerolog.Nop()}
	s, err := embedded.Open(filepath.Join(home, "events.db"), append(g.EmbeddedOptions(home), embedded.WithGuardInterval(time.Hour))...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verifyLost runs hermes store verify, which must exit 3 naming the loss
// (each of want) and every session of lostIDs as lost.
func verifyLost(t *testing.T, home string, lostIDs []string, want ...string) {
	t.Helper()
	out, errOut, err := run(t, home, "store", "verify")
	if exitCode(err) != damageExit {
		t.Fatalf("verify exited %v, want %d:\n%s\n%s", err, damageExit, out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("verify does not say %q:\n%s", w, out)
		}
	}
	for _, id := range lostIDs {
		if !strings.Contains(out, "lost        session-"+id+": projections.db lists this session") {
			t.Fatalf("verify does not name lost session %s:\n%s", id, out)
		}
	}
	out, _, err = run(t, home, "store", "verify", "--json")
	var rep embedded.Report
	if exitCode(err) != damageExit || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Problems) == 0 {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
}

// refuses checks that a command that reads the log refuses, naming the
// loss and what to do, instead of showing what is left.
func refuses(t *testing.T, home, what string) {
	t.Helper()
	out, errOut, err := run(t, home, "sessions", "list")
	if err == nil || !strings.Contains(errOut, what) || !strings.Contains(errOut, "hermes store verify") || strings.Contains(out, "no sessions yet") {
		t.Fatalf("sessions list with the log lost: %v\n%s\n%s", err, out, errOut)
	}
}

// TestLostEventsDBCLI does to a home's events.db what a hostile model with
// a shell did (deleted events.db*, replaced it, emptied it, swapped in an
// older copy, deleted it with its witness, cut a session out of it): a
// running store stops at its next append and saves what it still holds,
// every later command refuses to carry on, hermes store verify exits 3
// naming the loss and the sessions gone with it, and restoring the log
// makes the home whole again.
func TestLostEventsDBCLI(t *testing.T) {
	ctx := context.Background()
	all := []string{sidA, sidB, sidC}

	t.Run("rm under a running store", func(t *testing.T) {
		home := threeSessions(t)
		db := filepath.Join(home, "events.db")
		s := homeStore(t, home)
		const sidD = "dddddddd-4444-4000-8000-000000000004"
		seed(t, s, sidD, 1)
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Append(ctx, events.SessionStream(sidD), events.Any, schema.MustEnvelope(schema.Meta{SessionID: sidD, TurnID: "t9"}, schema.UserMessageAdded{Content: "after"}))
		var lost *events.LogLostError
		if !errors.As(err, &lost) || !strings.Contains(lost.What, "deleted") || lost.Rescued == "" {
			t.Fatalf("the append after rm events.db*: %v", err)
		}
		s.Close()
		refuses(t, home, "is missing")
		if _, err := os.Stat(db); err == nil {
			t.Fatal("a refused command created events.db")
		}
		verifyLost(t, home, all, "is missing", app.WitnessFile)
		// The copy the store saved is the whole log: put back, the home
		// is whole.
		if err := os.Rename(lost.Rescued, db); err != nil {
			t.Fatal(err)
		}
		if out := mustRun(t, home, "store", "verify"); !strings.Contains(out, "ok: no damage") {
			t.Fatalf("verify after the restore:\n%s", out)
		}
		if ids := listedIDs(t, home); len(ids) != 4 {
			t.Fatalf("after the restore, listed %v", ids)
		}
	})

	t.Run("replaced by an empty database", func(t *testing.T) {
		home := threeSessions(t)
		db := filepath.Join(home, "events.db")
		empty := filepath.Join(t.TempDir(), "events.db")
		e, err := embedded.Open(empty)
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if err := os.Rename(empty, db); err != nil {
			t.Fatal(err)
		}
		refuses(t, home, "holds another log")
		verifyLost(t, home, all, "holds another log", "0 events in 0 streams")
	})

	t.Run("truncated", func(t *testing.T) {
		home := threeSessions(t)
		if err := os.Truncate(filepath.Join(home, "events.db"), 0); err != nil {
			t.Fatal(err)
		}
		refuses(t, home, "holds no event log")
		verifyLost(t, home, all, "holds no event log")
	})

	t.Run("an older copy", func(t *testing.T) {
		home := threeSessions(t)
		db := filepath.Join(home, "events.db")
		older := filepath.Join(t.TempDir(), "older.db")
		raw, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`VACUUM INTO ?`, older); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		const sidD = "dddddddd-4444-4000-8000-000000000004"
		s := homeStore(t, home)
		seed(t, s, sidD, 1)
		s.Close()
		if ids := listedIDs(t, home); len(ids) != 4 {
			t.Fatalf("listed %v", ids)
		}
		copyInto(t, older, db)
		refuses(t, home, "ends at position 20")
		verifyLost(t, home, []string{sidD}, "ends at position 20")
		// The older copy taken on purpose: the home goes on from it.
		mustRun(t, home, "store", "accept")
		if out := mustRun(t, home, "store", "verify"); !strings.Contains(out, "ok: no damage") {
			t.Fatalf("verify after accept:\n%s", out)
		}
		if ids := listedIDs(t, home); len(ids) != 3 {
			t.Fatalf("after accept, listed %v", ids)
		}
	})

	t.Run("deleted with its witness", func(t *testing.T) {
		home := threeSessions(t)
		db := filepath.Join(home, "events.db")
		for _, f := range []string{db, db + "-wal", db + "-shm", filepath.Join(home, app.WitnessFile)} {
			os.Remove(f)
		}
		refuses(t, home, "projections.db remembers")
		verifyLost(t, home, all, "is missing", "projections.db remembers")
	})

	t.Run("a session cut out", func(t *testing.T) {
		// The rows of one session deleted and their positions recorded as
		// erased, as a deletion would, but without its tombstone: the
		// log's own checks pass; the session list still knows it.
		home := threeSessions(t)
		raw, err := sql.Open("sqlite", filepath.Join(home, "events.db"))
		if err != nil {
			t.Fatal(err)
		}
		stream := events.SessionStream(sidB)
		for _, q := range []string{
			`INSERT INTO erased SELECT position FROM events WHERE stream = ?`,
			`DELETE FROM events WHERE stream = ?`,
			`DELETE FROM streams WHERE stream = ?`,
		} {
			if _, err := raw.Exec(q, stream); err != nil {
				t.Fatal(err)
			}
		}
		raw.Close()
		verifyLost(t, home, []string{sidB})
	})

	t.Run("a deleted session is no loss", func(t *testing.T) {
		home := threeSessions(t)
		mustRun(t, home, "sessions", "delete", sidB, "--yes")
		if out := mustRun(t, home, "store", "verify"); !strings.Contains(out, "ok: no damage") {
			t.Fatalf("verify after a deletion:\n%s", out)
		}
	})

	t.Run("a new home", func(t *testing.T) {
		home := t.TempDir()
		if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, "no sessions yet") {
			t.Fatalf("a new home:\n%s", out)
		}
		if out := mustRun(t, home, "store", "verify"); !strings.Contains(out, "ok: no damage") {
			t.Fatalf("verify of a new home:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(home, app.WitnessFile)); err != nil {
			t.Fatalf("a new home has no witness: %v", err)
		}
	})
}

func copyInto(t *testing.T, from, to string) {
	t.Helper()
	for _, f := range []string{to + "-wal", to + "-shm"} {
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
