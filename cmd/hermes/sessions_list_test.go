package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

const (
	sidOne = "aaaaaaaa-0000-4000-8000-000000000001"
	sidTwo = "bbbbbbbb-0000-4000-8000-000000000002"
)

func TestSessionsListAndShowInProcess(t *testing.T) {
	quietEnv(t)
	home := seededHome(t, 2, sidOne, sidTwo)
	out, _, err := inHome(t, home, "sessions", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "ID") || !strings.Contains(out, sidOne) || !strings.Contains(out, sidTwo) || !strings.Contains(out, "gpt-4o-mini") {
		t.Fatalf("sessions list:\n%s", out)
	}
	out, _, err = inHome(t, home, "sessions", "list", "--json", "--limit", "1")
	if err != nil {
		t.Fatal(err)
	}
	var list []sessions.Summary
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].Messages != 4 {
		t.Fatalf("sessions list --json --limit 1: %v\n%s", err, out)
	}
	out, _, err = inHome(t, home, "sessions", "show", "bbbbbbbb")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "session "+sidTwo) || !strings.Contains(out, "hello 1 from "+sidTwo) || strings.Contains(out, sidOne) {
		t.Fatalf("sessions show by prefix:\n%s", out)
	}
	if _, _, err := inHome(t, home, "sessions", "show", "cccccccc"); err == nil || !strings.Contains(err.Error(), `no session "cccccccc"`) {
		t.Fatalf("an unknown session: %v", err)
	}
}

// The run function works without cobra: options in, output on the
// streams given.
func TestRunSessionsListOptions(t *testing.T) {
	quietEnv(t)
	home := seededHome(t, 1, sidOne)
	var out, errb strings.Builder
	f := &app.Factory{HomeFlag: home, IO: app.IOStreams{Out: &out, ErrOut: &errb}}
	if err := f.Setup(); err != nil {
		t.Fatal(err)
	}
	opts := &sessionsListOptions{app: f, io: f.IO, asJSON: true}
	if err := runSessionsList(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"id": "`+sidOne+`"`) {
		t.Fatalf("runSessionsList: %s", out.String())
	}
}

// A conversation that /undo, /retry and compression forked into several
// sessions is one entry of sessions list: its most recently active
// session, the tokens and cost of all of them, and its branches counted
// (listed in --json); --all shows every session.
func TestSessionsListOneEntryPerConversationInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seed(t, s, sidOne, 2)
	undo, err := session.Fork(ctx, s, sidOne, 3) // /undo of the second turn
	if err != nil {
		t.Fatal(err)
	}
	retry, err := session.Fork(ctx, s, undo, 1) // /retry in the fork
	if err != nil {
		t.Fatal(err)
	}
	m := schema.Meta{SessionID: retry}
	if _, err := s.Append(ctx, events.SessionStream(retry), events.Any,
		schema.MustEnvelope(m, schema.UserMessageAdded{Content: "again"}),
		schema.MustEnvelope(m, schema.AssistantMessageAdded{Content: "ok", Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 100, CompletionTokens: 5}, CostUSD: 0.001}),
		schema.MustEnvelope(m, schema.SessionTitled{Title: "Greeting chat"})); err != nil {
		t.Fatal(err)
	}
	compressed := "cccccccc-0000-4000-8000-000000000003"
	if _, err := s.Append(ctx, events.SessionStream(compressed), events.NoStream,
		schema.MustEnvelope(schema.Meta{SessionID: compressed}, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Reason: schema.StartCompression, ParentSessionID: retry,
			History: []schema.Message{{Role: "user", Content: "summary"}}})); err != nil {
		t.Fatal(err)
	}
	seed(t, s, sidTwo, 1) // another conversation, the latest
	s.Close()

	out, _, err := inHome(t, home, "sessions", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], sidTwo) || !strings.HasPrefix(lines[2], compressed) ||
		!strings.Contains(lines[2], "Greeting chat (+3 branches)") || !strings.Contains(lines[2], "$0.0030") {
		t.Fatalf("sessions list:\n%s", out)
	}
	out, _, err = inHome(t, home, "sessions", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []conversation
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	c := list[1]
	if c.ID != compressed || c.Sessions != 4 || len(c.Branches) != 3 || !slices.Contains(c.Branches, sidOne) || c.Usage.PromptTokens != 300 {
		t.Fatalf("--json conversation: %+v", c)
	}
	if list[0].ID != sidTwo || list[0].Sessions != 1 || list[0].Branches != nil {
		t.Fatalf("--json single session: %+v", list[0])
	}
	out, _, err = inHome(t, home, "sessions", "list", "--all")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sidOne, undo, retry, compressed, sidTwo} {
		if !strings.Contains(out, id) {
			t.Errorf("--all lacks %s:\n%s", id, out)
		}
	}
}
