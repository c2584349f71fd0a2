package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
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
