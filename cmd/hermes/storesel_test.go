package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/events/storetest"
)

// TestStoreCopyToPostgresAndUse copies a home's embedded log into a real
// PostgreSQL with `hermes store copy`, then runs hermes on it with --store
// and with store: in config.yaml; the password of the URL never shows.
func TestStoreCopyToPostgresAndUse(t *testing.T) {
	srv := pgtest.Start(t)
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "aaaa1111-0000-4000-8000-000000000001", 2)
	seed(t, s, "bbbb2222-0000-4000-8000-000000000002", 3)
	s.Close()
	// The test server trusts loopback, so any password connects: the
	// point is that it is never printed.
	u, _ := url.Parse(srv.Database(t))
	u.User = url.UserPassword("postgres", "s3cretpw")
	pg := u.String()

	want := mustRun(t, home, "sessions", "list")
	out, errOut, err := run(t, home, "--log-level", "debug", "store", "copy", "--to", pg)
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "copied 14 events") || !strings.Contains(out, "verified: 2 streams (0 deleted), 14 events") {
		t.Fatalf("copy said %q", out)
	}
	noSecret(t, out+errOut)

	// The sessions read the same from PostgreSQL (the read models rebuild
	// for the other log).
	out, errOut, err = run(t, home, "--log-level", "debug", "--store", pg, "sessions", "list")
	if err != nil {
		t.Fatalf("sessions list on postgres: %v\n%s", err, errOut)
	}
	noSecret(t, out+errOut)
	if out != want {
		t.Fatalf("sessions on postgres:\n%s\nembedded:\n%s", out, want)
	}

	// Embedded-only commands refuse another store clearly.
	_, errOut, err = run(t, home, "--store", pg, "store", "verify")
	if err == nil || !strings.Contains(errOut, "store verify works on the embedded store only") {
		t.Fatalf("verify on postgres: %v %s", err, errOut)
	}
	noSecret(t, errOut)

	// store: in config.yaml picks it too; a new session lands there only.
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("store: "+pg+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, home, "config", "show"); !strings.Contains(out, "postgres://postgres:xxxxx@") {
		t.Fatalf("config show does not name the store:\n%s", out)
	} else {
		noSecret(t, out)
	}
	if out := mustRun(t, home, "sessions", "list"); out != want {
		t.Fatalf("sessions with store: in config.yaml:\n%s", out)
	}
	// Running the copy again finds it done.
	out = mustRun(t, home, "store", "copy", "--from", "embedded", "--to", pg)
	if !strings.Contains(out, "copied 0 events") || !strings.Contains(out, "14 were there already") {
		t.Fatalf("second copy said %q", out)
	}
	// Back into a fresh embedded file: the same log.
	back := filepath.Join(t.TempDir(), "back.db")
	mustRun(t, home, "store", "copy", "--to", "embedded:"+back)
	a, _ := embedded.OpenReadOnly(filepath.Join(home, "events.db"))
	defer a.Close()
	b, _ := embedded.OpenReadOnly(back)
	defer b.Close()
	x, _ := a.ReadAll(context.Background(), 0, 1000)
	y, _ := b.ReadAll(context.Background(), 0, 1000)
	if len(x) != 14 || len(y) != 14 {
		t.Fatalf("%d events, copied back %d", len(x), len(y))
	}
	for i := range x {
		if x[i].ID != y[i].ID || x[i].Revision != y[i].Revision || string(x[i].Payload) != string(y[i].Payload) {
			t.Fatalf("event %d differs after the round trip", i)
		}
	}
}

func noSecret(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, "s3cretpw") {
		t.Fatalf("the password shows:\n%s", s)
	}
}

// TestStoreCopyRefusesConflictingTarget: a target holding other events is
// refused, and nothing is written to it.
func TestStoreCopyRefusesConflictingTarget(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "cccc3333-0000-4000-8000-000000000003", 1)
	s.Close()
	other := filepath.Join(t.TempDir(), "other.db")
	o, err := embedded.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Append(context.Background(), "mine", events.Any, storetest.Event("x", "mine")); err != nil {
		t.Fatal(err)
	}
	o.Close()
	_, errOut, err := run(t, home, "store", "copy", "--to", "embedded:"+other)
	if err == nil || !strings.Contains(errOut, "not a prefix of the source") {
		t.Fatalf("copy into a used store: %v %s", err, errOut)
	}
	o, _ = embedded.OpenReadOnly(other)
	defer o.Close()
	if rs, _ := o.ReadAll(context.Background(), 0, 100); len(rs) != 1 {
		t.Fatalf("refused copy left %d events", len(rs))
	}
}

// TestStoreSelectionErrors: an unknown store is refused naming where it
// came from, without its password; so is store: in config.yaml.
func TestStoreSelectionErrors(t *testing.T) {
	home := t.TempDir()
	_, errOut, err := run(t, home, "--store", "mysql://u:s3cretpw@db/x", "sessions", "list")
	if err == nil || !strings.Contains(errOut, "--store: unknown store") {
		t.Fatalf("unknown store: %v %s", err, errOut)
	}
	noSecret(t, errOut)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("store: sqlite\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = run(t, home, "sessions", "list")
	if err == nil || !strings.Contains(errOut, "store in "+filepath.Join(home, "config.yaml")) {
		t.Fatalf("bad store: in config: %v %s", err, errOut)
	}
	_, errOut, err = run(t, home, "config", "show")
	if err == nil || !strings.Contains(errOut, "store: unknown store") {
		t.Fatalf("config show with a bad store: %v %s", err, errOut)
	}
	// --read-only is the embedded store's.
	_, errOut, err = run(t, home, "--read-only", "--store", "postgres://u@127.0.0.1:1/x", "sessions", "list")
	if err == nil || !strings.Contains(errOut, "works with the embedded store only") {
		t.Fatalf("read-only with postgres: %v %s", err, errOut)
	}
}

// TestChatOnPostgres runs a chat turn with HERMES_STORE naming a real
// PostgreSQL: the session's events land there (not in events.db), and a
// second process resumes and shows the session from there.
func TestChatOnPostgres(t *testing.T) {
	pgsrv := pgtest.Start(t)
	dsn := pgsrv.Database(t)
	srv := llmtest.New(llmtest.Reply{Content: "Paris."}, llmtest.Reply{Content: "Lyon."})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv, "HERMES_STORE="+dsn)
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "Capital of France?", "--model", "gpt-4o-mini")
	if code != 0 || out != "Paris.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	if _, err := os.Stat(filepath.Join(home, "events.db")); err == nil {
		t.Fatal("the chat wrote events.db although the store is PostgreSQL")
	}
	pg, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rs, err := pg.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil || len(rs) < 3 {
		t.Fatalf("session in PostgreSQL: %d events, %v", len(rs), err)
	}
	out, errOut, code = hermes(t, env, "", "--home", home, "chat", "--resume", id, "-q", "And the second city?", "--model", "gpt-4o-mini")
	if code != 0 || out != "Lyon.\n" {
		t.Fatalf("resume: exit %d stdout %q stderr %s", code, out, errOut)
	}
	if msgs := srv.Requests()[1].Body["messages"].([]any); len(msgs) != 4 {
		t.Fatalf("the resumed turn sent %d messages, want the history (4)", len(msgs))
	}
}
