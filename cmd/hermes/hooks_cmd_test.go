package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestHooksThroughTheBinary: without a terminal a new hook is refused
// (and says how to allow it) until --accept-hooks, which remembers it;
// `hooks list` shows the approval, `hooks test` fires a hook with the
// sample payload and shows its decision, `hooks doctor` finds a missing
// script and a script changed since it was allowed, `hooks revoke`
// forgets the approval.
func TestHooksThroughTheBinary(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "first"}, llmtest.Reply{Content: "second"})
	defer srv.Close()
	home, dir := t.TempDir(), t.TempDir()
	ctxHook := filepath.Join(dir, "ctx.sh")
	os.WriteFile(ctxHook, []byte("#!/bin/sh\necho '{\"context\": \"[from the hook]\"}'\n"), 0o755)
	shout := filepath.Join(dir, "shout.sh")
	os.WriteFile(shout, []byte("#!/bin/sh\necho '{\"response_text\": \"REPLACED\"}'\n"), 0o755)
	writeConfig(t, home, fmt.Sprintf("model: m\nhooks:\n  pre_llm_call:\n    - command: %s\n  transform_llm_output:\n    - command: %s\n  pre_verify:\n    - command: %s\n",
		ctxHook, shout, filepath.Join(dir, "missing.sh")))

	// No terminal, no flag: the hooks do not run, and the person is told.
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "hi")
	if code != 0 || out != "first\n" || !strings.Contains(errOut, "shell hook not allowed") {
		t.Fatalf("exit %d %q\n%s", code, out, errOut)
	}
	if body := string(srv.Requests()[0].Raw); strings.Contains(body, "[from the hook]") {
		t.Fatal("a hook nobody allowed ran")
	}
	list := mustRun(t, home, "hooks", "list")
	if !strings.Contains(list, "not allowed yet") || !strings.Contains(list, "never fired: this build has no verification-stop loop") {
		t.Fatalf("hooks list:\n%s", list)
	}
	// --accept-hooks allows them, and it is remembered.
	out, errOut, code = hermes(t, chatEnv(srv), "", "--home", home, "--accept-hooks", "chat", "-q", "hi")
	if code != 0 || out != "REPLACED\n" {
		t.Fatalf("exit %d %q\n%s", code, out, errOut)
	}
	if body := string(srv.Requests()[1].Raw); !strings.Contains(body, "[from the hook]") {
		t.Fatalf("pre_llm_call did not run: %s", body)
	}
	data, _ := os.ReadFile(filepath.Join(home, "shell-hooks-allowlist.json"))
	if !strings.Contains(string(data), ctxHook) || !strings.Contains(string(data), `"event": "transform_llm_output"`) {
		t.Fatalf("allowlist: %s", data)
	}
	if list := mustRun(t, home, "hooks", "list"); strings.Count(list, "allowed 20") != 2 {
		t.Fatalf("hooks list:\n%s", list)
	}

	if out := mustRun(t, home, "hooks", "test", "transform_llm_output"); !strings.Contains(out, "decision: transform: REPLACED") || !strings.Contains(out, shout) {
		t.Fatalf("hooks test:\n%s", out)
	}
	if _, errOut, err := run(t, home, "hooks", "test", "pre_tool_cal"); err == nil || !strings.Contains(errOut, "unknown hook event") {
		t.Fatalf("an unknown event was tested: %s", errOut)
	}

	// doctor: the missing script and a changed one are problems.
	os.WriteFile(shout, []byte("#!/bin/sh\necho '{}'\n"), 0o755)
	changed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(shout, changed, changed)
	out, _, err := run(t, home, "hooks", "doctor")
	if err == nil || !strings.Contains(out, "missing.sh does not exist") || !strings.Contains(out, "the script changed since it was allowed") ||
		!strings.Contains(out, "a sample firing answered") {
		t.Fatalf("doctor (%v):\n%s", err, out)
	}
	if out := mustRun(t, home, "hooks", "revoke", shout); !strings.Contains(out, "Removed 1 approvals") {
		t.Fatalf("revoke: %s", out)
	}
	if list := mustRun(t, home, "hooks", "list"); strings.Count(list, "allowed 20") != 1 {
		t.Fatalf("after revoke:\n%s", list)
	}
}

// TestHookConsentOnTheTerminal: in the chat screen, a new hook is asked
// about once, on the terminal, before the screen takes it; yes runs it and
// is remembered, so the next chat does not ask; no keeps it from running.
func TestHookConsentOnTheTerminal(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "first answer"}, llmtest.Reply{Content: "second answer"})
	defer srv.Close()
	home, dir := t.TempDir(), t.TempDir()
	ran := filepath.Join(dir, "ran")
	yes := filepath.Join(dir, "yes.sh")
	os.WriteFile(yes, []byte("#!/bin/sh\necho yes >> "+ran+"\n"), 0o755)
	no := filepath.Join(dir, "no.sh")
	os.WriteFile(no, []byte("#!/bin/sh\necho no >> "+ran+"\n"), 0o755)
	writeConfig(t, home, fmt.Sprintf("model: m\nhooks:\n  pre_llm_call:\n    - command: %s\n  on_session_end:\n    - command: %s\n", yes, no))
	start := func() *pane {
		return newPane(t, dir, screenEnv(srv), 100, 30, fmt.Sprintf("%s --home %s chat; sleep 60", bin, home))
	}
	p := start()
	p.waitText("Command: " + yes)
	p.text("y")
	p.keys("Enter")
	p.waitText("Command: " + no)
	p.text("n")
	p.keys("Enter")
	p.waitText("/help lists the commands")
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	p.text("hello")
	p.keys("Enter")
	p.waitText("first answer")
	p.keys("C-d")
	time.Sleep(500 * time.Millisecond)
	if data, _ := os.ReadFile(ran); string(data) != "yes\n" {
		t.Fatalf("the hooks that ran: %q", data)
	}
	// The next chat: the yes is remembered, the no is asked again.
	p2 := start()
	s := p2.waitText("Command: " + no)
	if strings.Contains(s, "Command: "+yes) {
		t.Fatalf("an allowed hook was asked about again:\n%s", s)
	}
	p2.text("n")
	p2.keys("Enter")
	p2.waitText("/help lists the commands")
}
