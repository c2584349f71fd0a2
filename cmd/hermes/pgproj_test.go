package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/projections/sessions"
)

// TestSharedProjectionsOnPostgres: with a PostgreSQL store the table
// projections live in that database (schema hermes_projections), so a
// second, empty home finds the projections the first one built, already up
// to date, and `hermes projections status|rebuild` work on them.
func TestSharedProjectionsOnPostgres(t *testing.T) {
	pgsrv := pgtest.Start(t)
	dsn := pgsrv.Database(t)
	srv := llmtest.New(llmtest.Reply{Content: "Paris."})
	defer srv.Close()
	first, second := t.TempDir(), t.TempDir()
	env := chatEnv(srv, "HERMES_STORE="+dsn)
	out, errOut, code := hermes(t, env, "", "--home", first, "chat", "-q", "Capital of France?", "--model", "gpt-4o-mini")
	if code != 0 || out != "Paris.\n" {
		t.Fatalf("chat: exit %d stdout %q stderr %s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	listed := func(home string) []sessions.Summary {
		t.Helper()
		out, errOut, code := hermes(t, env, "", "--home", home, "sessions", "list", "--json")
		if code != 0 {
			t.Fatalf("sessions list in %s: exit %d\n%s", home, code, errOut)
		}
		var list []sessions.Summary
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return list
	}
	if list := listed(first); len(list) != 1 || list[0].ID != id {
		t.Fatalf("first home lists %+v", list)
	}
	// The rows are in PostgreSQL, where the first home put them.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var cp uint64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM hermes_projections.sessions WHERE id = $1`, id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("session rows in hermes_projections: %d, %v", n, err)
	}
	if err := conn.QueryRow(ctx, `SELECT position FROM hermes_projections.checkpoints WHERE name = 'sessions'`).Scan(&cp); err != nil {
		t.Fatal(err)
	}
	if cp == 0 || cp != head {
		t.Fatalf("sessions checkpoint %d, head %d", cp, head)
	}

	// The empty home's status (which does not catch up) shows them built.
	status := func(home string) string {
		t.Helper()
		out, errOut, code := hermes(t, env, "", "--home", home, "projections", "status")
		if code != 0 {
			t.Fatalf("projections status: exit %d\n%s", code, errOut)
		}
		return out
	}
	for _, name := range []string{"sessions", "history", "lineage", "costs"} {
		if want := fmt.Sprintf("%s %d %d 0", name, head, head); !hasLine(status(second), want) {
			t.Fatalf("status in the second home lacks %q:\n%s", want, status(second))
		}
	}
	if list := listed(second); len(list) != 1 || list[0].ID != id || list[0].Messages != 2 {
		t.Fatalf("second home lists %+v", list)
	}
	out, errOut, code = hermes(t, env, "", "--home", second, "sessions", "show", id[:8])
	if code != 0 || !strings.Contains(out, "Paris.") {
		t.Fatalf("sessions show in the second home: exit %d\n%s\n%s", code, out, errOut)
	}

	// A rebuild from the second home rebuilds the one shared copy.
	out, errOut, code = hermes(t, env, "", "--home", second, "projections", "rebuild", "sessions")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("rebuilt sessions up to position %d", head)) {
		t.Fatalf("rebuild: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = hermes(t, env, "", "--home", second, "projections", "rebuild")
	if code != 0 || !strings.Contains(out, "rebuilt all projections") {
		t.Fatalf("rebuild all: exit %d\n%s\n%s", code, out, errOut)
	}
	if !hasLine(status(first), fmt.Sprintf("costs %d %d 0", head, head)) {
		t.Fatalf("status in the first home after the rebuild:\n%s", status(first))
	}
	if list := listed(first); len(list) != 1 || list[0].ID != id || list[0].Messages != 2 {
		t.Fatalf("first home lists %+v after the rebuild", list)
	}
}
