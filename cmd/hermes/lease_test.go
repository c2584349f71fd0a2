package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// startChat starts hermes with args and returns it once it printed its
// session, with that session's id and its stderr so far.
func startChat(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(pr)
	id := ""
	for id == "" && sc.Scan() {
		errb.WriteString(sc.Text() + "\n")
		if v, ok := strings.CutPrefix(sc.Text(), "session: "); ok {
			id = v
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if id == "" {
		t.Fatalf("hermes printed no session:\n%s", errb.String())
	}
	return cmd, id, &out, &errb
}

func waitRequests(t *testing.T, srv *llmtest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(srv.Requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want %d", len(srv.Requests()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestResumeRefusedWhileOwnerLives: a session one hermes process runs (a
// slow tool in flight) cannot be resumed by a second process, which would
// close the first one's call as crashed and lose its result; once the
// owner is killed with SIGKILL, resuming takes the session over and says so.
func TestResumeRefusedWhileOwnerLives(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_slow", Name: "terminal", Args: `{"command":"sleep 3; echo slow-tool-finished"}`}}},
		llmtest.Reply{Content: "the tool finished."},
		llmtest.Reply{Content: "never arrives", Delay: time.Minute},
		llmtest.Reply{Content: "taken over."})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv)

	first, id, _, _ := startChat(t, env, "--home", home, "chat", "-q", "run the slow thing", "--model", "m")
	waitRequests(t, srv, 1) // the tool call is out: the tool runs now
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "--resume", id, "-q", "me too", "--model", "m")
	want := fmt.Sprintf("session %s is in use by pid %d on ", id, first.Process.Pid)
	if code == 0 || out != "" || !strings.Contains(errOut, want) || !strings.Contains(errOut, "hermes sessions fork "+id) {
		t.Fatalf("second process while the first runs: exit %d stdout %q stderr:\n%s", code, out, errOut)
	}
	// The same from an interactive chat's /resume: refused, the chat goes on.
	_, errOut, code = hermes(t, env, "/resume "+id+"\n/exit\n", "--home", home, "chat", "--model", "m")
	if code != 0 || !strings.Contains(errOut, "error: "+want) {
		t.Fatalf("/resume while the first runs: exit %d stderr:\n%s", code, errOut)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the owner failed: %v", err)
	}
	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	kept := false
	for _, r := range rs {
		types = append(types, r.Type)
		if p, err := schema.Decode(r.Envelope); err == nil {
			if tr, ok := p.(schema.ToolResultAdded); ok && strings.Contains(tr.Content, "slow-tool-finished") && !tr.Interrupted {
				kept = true
			}
		}
	}
	if !kept || strings.Contains(strings.Join(types, " "), "TurnInterrupted") {
		t.Fatalf("the owner's tool result was not kept: %v", types)
	}

	// An owner killed with SIGKILL leaves its lock to the kernel: the
	// session is free at once.
	owner, _, _, _ := startChat(t, env, "--home", home, "chat", "--resume", id, "-q", "slow answer please", "--model", "m")
	waitRequests(t, srv, 3)
	if _, errOut, code := hermes(t, env, "", "--home", home, "chat", "--resume", id, "-q", "now?", "--model", "m"); code == 0 ||
		!strings.Contains(errOut, fmt.Sprintf("in use by pid %d", owner.Process.Pid)) {
		t.Fatalf("resume beside a live owner: exit %d\n%s", code, errOut)
	}
	owner.Process.Signal(syscall.SIGKILL)
	owner.Wait()
	out, errOut, code = hermes(t, env, "", "--home", home, "chat", "--resume", id, "-q", "now?", "--model", "m")
	if code != 0 || out != "taken over.\n" {
		t.Fatalf("resume after the owner died: exit %d stdout %q\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("left open by pid %d", owner.Process.Pid)) || !strings.Contains(errOut, "taking it over") {
		t.Fatalf("the takeover is not said:\n%s", errOut)
	}
	// A chat that ended well leaves nothing behind.
	if m, _ := filepath.Glob(filepath.Join(home, "locks", "*")); len(m) != 0 {
		t.Fatalf("lock files left: %v", m)
	}
}
