package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

var bin string

// TestMain builds the real hermes binary once; the tests run it as separate
// processes, the way people do.
func TestMain(m *testing.M) {
	mcptest.MaybeServe() // this binary is also the fake MCP servers of the tests
	dir, err := os.MkdirTemp("", "hermes-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "hermes")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hermes: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, home string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--home", home}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func mustRun(t *testing.T, home string, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, home, args...)
	if err != nil {
		t.Fatalf("hermes %v: %v\n%s", args, err, errOut)
	}
	return out
}

func seed(t *testing.T, s *embedded.Store, sid string, turns int) {
	t.Helper()
	ctx := context.Background()
	m := schema.Meta{SessionID: sid, TurnID: "t0"}
	evs := []schema.Envelope{
		schema.MustEnvelope(m, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Reason: schema.StartNew}),
		schema.MustEnvelope(m, schema.SystemPromptBuilt{Content: "You are Hermes."}),
	}
	for i := range turns {
		evs = append(evs,
			schema.MustEnvelope(m, schema.UserMessageAdded{Content: fmt.Sprintf("hello %d from %s", i, sid)}),
			schema.MustEnvelope(m, schema.AssistantMessageAdded{Content: "hi", FinishReason: "stop", Model: "gpt-4o-mini",
				Usage: schema.Usage{PromptTokens: 100, CompletionTokens: 5}, CostUSD: 0.001}))
	}
	if _, err := s.Append(ctx, events.SessionStream(sid), events.Any, evs...); err != nil {
		t.Fatal(err)
	}
}

// keepSeeding appends sessions of the given turns to s in the background,
// pausing between them, until the returned function is called; that
// function returns how many were written.
func keepSeeding(t *testing.T, s *embedded.Store, turns int, pause time.Duration) func() int {
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			seed(t, s, fmt.Sprintf("%08d-0000-4000-8000-000000000000", n+1), turns)
			n++
			time.Sleep(pause)
		}
	}()
	return func() int {
		close(stop)
		return <-done
	}
}

func TestSessionsCommands(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "11111111-aaaa-4000-8000-000000000001", 2)
	seed(t, s, "22222222-bbbb-4000-8000-000000000002", 3)
	s.Close()

	var list []sessions.Summary
	if err := json.Unmarshal([]byte(mustRun(t, home, "sessions", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "22222222-bbbb-4000-8000-000000000002" || list[0].Messages != 6 || list[0].Title != "hello 0 from 22222222-bbbb-4000-8000-000000000002" {
		t.Fatalf("list: %+v", list)
	}
	if list[1].CostUSD < 0.00199 || list[1].Usage.PromptTokens != 200 {
		t.Fatalf("usage of first session: %+v", list[1])
	}
	text := mustRun(t, home, "sessions", "list")
	if !strings.Contains(text, "11111111-aaaa-4000-8000-000000000001") || !strings.Contains(text, "TITLE") {
		t.Fatalf("text list:\n%s", text)
	}

	var msgs []schema.Message
	if err := json.Unmarshal([]byte(mustRun(t, home, "sessions", "show", "1111", "--json")), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || msgs[0].Role != "system" || msgs[1].Content != "hello 0 from 11111111-aaaa-4000-8000-000000000001" || msgs[4].Role != "assistant" {
		t.Fatalf("show --json: %+v", msgs)
	}

	lines := strings.Split(strings.TrimSpace(mustRun(t, home, "sessions", "events", "11111111-aaaa-4000-8000-000000000001", "--json")), "\n")
	if len(lines) != 6 {
		t.Fatalf("events --json printed %d lines", len(lines))
	}
	for i, l := range lines {
		var r events.Recorded
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d is not one JSON object: %v", i, err)
		}
		if r.Revision != uint64(i) || r.SessionID != "11111111-aaaa-4000-8000-000000000001" || r.ID == "" {
			t.Fatalf("line %d: %+v", i, r)
		}
	}

	if out := mustRun(t, home, "projections", "rebuild"); !strings.Contains(out, "rebuilt all projections") {
		t.Fatalf("rebuild: %s", out)
	}
	status := mustRun(t, home, "projections", "status")
	if !strings.Contains(status, "sessions") || !strings.Contains(status, "history") {
		t.Fatalf("status:\n%s", status)
	}
	if _, errOut, err := run(t, home, "projections", "rebuild", "nosuch"); err == nil || !strings.Contains(errOut, `no projection named "nosuch"`) {
		t.Fatalf("rebuild of an unknown projection: %v %s", err, errOut)
	}
	if _, errOut, err := run(t, home, "sessions", "show", "nope-nope"); err == nil || !strings.Contains(errOut, `no session "nope-nope"`) {
		t.Fatalf("show of an unknown session: %v %s", err, errOut)
	}

	mustRun(t, home, "sessions", "delete", "11111111-aaaa-4000-8000-000000000001")
	list = nil
	json.Unmarshal([]byte(mustRun(t, home, "sessions", "list", "--json")), &list)
	if len(list) != 1 {
		t.Fatalf("deleted session still listed: %+v", list)
	}
	if _, errOut, err := run(t, home, "sessions", "events", "11111111-aaaa-4000-8000-000000000001"); err == nil || !strings.Contains(errOut, "deleted") {
		t.Fatalf("events of a deleted session: %v %s", err, errOut)
	}
}

// TestProcessesShareHome: one process keeps appending (as `hermes chat`
// would) while several hermes processes list, show and report status at the
// same time. None may hang or fail with a locked database.
func TestProcessesShareHome(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed(t, s, "00000000-0000-4000-8000-000000000000", 1)
	stopWriter := keepSeeding(t, s, 2, 0)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for p := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				args := [][]string{{"sessions", "list", "--json"}, {"sessions", "show", "00000000-0000-4000-8000-000000000000", "--json"}, {"projections", "status"}}[(p+i)%3]
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				cmd := exec.CommandContext(ctx, bin, append([]string{"--home", home}, args...)...)
				out, err := cmd.CombinedOutput()
				cancel()
				if err != nil || strings.Contains(string(out), "locked") {
					errs <- fmt.Sprintf("hermes %v: %v\n%s", args, err, out)
				}
			}
		}()
	}
	wg.Wait()
	written := stopWriter()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var list []sessions.Summary
	json.Unmarshal([]byte(mustRun(t, home, "sessions", "list", "--json")), &list)
	if len(list) != written+1 {
		t.Fatalf("listed %d sessions, %d were written", len(list), written+1)
	}
	if written == 0 {
		t.Fatal("the writer never ran alongside the readers")
	}
}
