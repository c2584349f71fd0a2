package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/embedded"
)

// chat -q with standard input closed (no terminal) denies an approval at
// once, saying why and how to allow it; an answer that is not a choice is
// asked again instead of being taken as a refusal.
func TestApprovalWithoutTerminalAndUnclearAnswers(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Not allowed."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t2", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Deleted."},
	)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(wd, "build"), 0o755)
	start := time.Now()
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "clean the build")
	if code != 0 || out != "Not allowed.\n" || !strings.Contains(errOut, "standard input is not a terminal and has ended") || !strings.Contains(errOut, "--yolo") {
		t.Fatalf("closed stdin: %d %q\n%s", code, out, errOut)
	}
	// (the approval's own 60 s timeout was what ended it before)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %s", d)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err != nil {
		t.Fatal("a command ran without approval")
	}
	out, errOut, code = hermesIn(t, wd, chatEnv(srv), "yse\nonce\n", "--home", home, "chat", "--model", "m", "-q", "clean it now")
	if code != 0 || out != "Deleted.\n" || !strings.Contains(errOut, `"yse" is not an answer`) {
		t.Fatalf("unclear answer: %d %q\n%s", code, out, errOut)
	}
}

// A turn that used its whole iteration budget says so on stderr and exits
// with 3, after printing the model's summary.
func TestBudgetExhaustedExitCode(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t1", Name: "todo", Args: `{"todos":[{"id":"1","content":"a","status":"pending"}]}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t2", Name: "todo", Args: `{}`}}},
		llmtest.Reply{Content: "I ran out of steps; the todo list is set."},
	)
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "--max-turns", "2", "-q", "plan it")
	if code != exitBudget || out != "I ran out of steps; the todo list is set.\n" || !strings.Contains(errOut, "iteration budget ran out after") {
		t.Fatalf("budget: %d %q\n%s", code, out, errOut)
	}
}

// Empty and subagent sessions stay out of the default list and of
// --continue; --all shows them. sessions events prints a header.
func TestSessionListHidesEmptySessions(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "hello there"})
	defer srv.Close()
	home := t.TempDir()
	_, errOut, _ := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "hi")
	full := sessionIDFrom(t, errOut)
	// an interactive chat that ends without a message leaves an empty session
	_, errOut, _ = hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m")
	empty := sessionIDFrom(t, errOut)
	list := mustRun(t, home, "sessions", "list")
	if !strings.Contains(list, full) || strings.Contains(list, empty) {
		t.Fatalf("default list:\n%s", list)
	}
	if all := mustRun(t, home, "sessions", "list", "--all"); !strings.Contains(all, empty) {
		t.Fatalf("--all:\n%s", all)
	}
	srv.Add(llmtest.Reply{Content: "again"})
	_, errOut, _ = hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "--continue", "-q", "more")
	if got := sessionIDFrom(t, errOut); got != full {
		t.Fatalf("--continue took %s, want %s (the empty one is %s)", got, full, empty)
	}
	if ev := mustRun(t, home, "sessions", "events", full); !strings.HasPrefix(strings.TrimSpace(ev), "POS") {
		t.Fatalf("events without a header:\n%s", ev)
	}
}

// sessions delete refuses a session another process runs.
func TestDeleteRefusesALeasedSession(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	sid := "00000000-0000-4000-8000-0000000000aa"
	seed(t, s, sid, 1)
	s.Close()
	// this test process runs the session, as a chat would
	lease, err := session.NewFileLeases(filepath.Join(home, "locks"), session.ThisProcess()).Lease(sid)
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run(t, home, "sessions", "delete", sid, "--yes"); err == nil || !strings.Contains(errOut, "in use") {
		t.Fatalf("a running session was deleted: %v %s", err, errOut)
	}
	lease.Release()
	mustRun(t, home, "sessions", "delete", sid, "--yes")
	if list := mustRun(t, home, "sessions", "list", "--all"); strings.Contains(list, sid) {
		t.Fatalf("not deleted:\n%s", list)
	}
}

// import hermes-state of a file that is not a database says so.
func TestImportNotADatabase(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("just some notes, not SQLite\n"), 0o600)
	if _, errOut, err := run(t, home, "import", "hermes-state", p); err == nil || !strings.Contains(errOut, "is not a SQLite database") {
		t.Fatalf("%v %s", err, errOut)
	}
}

// Provider errors fail fast and name the cause: a refused connection and an
// unknown host name the URL (no timeout retries), a missing key is refused
// before any request naming the variable, an unknown --provider lists the
// known ones, and a Claude model without a provider goes to Anthropic.
func TestProviderErrorsFailFast(t *testing.T) {
	home := t.TempDir()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:1/v1", "cannot connect to http://127.0.0.1:1/v1/chat/completions"},
		{"http://nonexistent.invalid/v1", "cannot connect to http://nonexistent.invalid/v1/chat/completions"},
	} {
		start := time.Now()
		_, errOut, code := hermes(t, append(base, "OPENAI_BASE_URL="+c.url), "", "--home", home, "chat", "--model", "m", "-q", "hi")
		if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "unreachable") {
			t.Fatalf("%s: %d\n%s", c.url, code, errOut)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("%s took %s (retried as a timeout?)", c.url, d)
		}
	}
	_, errOut, code := hermes(t, base, "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "hi")
	if code == 0 || !strings.Contains(errOut, "no API key") || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("missing key: %d\n%s", code, errOut)
	}
	_, errOut, code = hermes(t, base, "", "--home", home, "chat", "--model", "claude-sonnet-4-5", "-q", "hi")
	if code == 0 || !strings.Contains(errOut, "ANTHROPIC_API_KEY") {
		t.Fatalf("claude model: %d\n%s", code, errOut)
	}
	_, errOut, code = hermes(t, base, "", "--home", home, "chat", "--provider", "nosuch", "--model", "m", "-q", "hi")
	if code == 0 || !strings.Contains(errOut, "openai, anthropic, openrouter") {
		t.Fatalf("unknown provider: %d\n%s", code, errOut)
	}
}

// projections status and rebuild include the search index.
func TestProjectionsIncludeSearch(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "00000000-0000-4000-8000-0000000000cc", 2)
	s.Close()
	if out := mustRun(t, home, "projections", "status"); !strings.Contains(out, "not built yet") {
		t.Fatalf("status:\n%s", out)
	}
	mustRun(t, home, "projections", "rebuild", "search")
	out := mustRun(t, home, "projections", "status")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "search") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) != 4 || f[3] != "0" || f[1] == "0" {
		t.Fatalf("search after its rebuild: %q\n%s", line, out)
	}
	mustRun(t, home, "projections", "rebuild")
}
