package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// pane is a tmux pane running a command on a terminal of its own: keys
// are typed into it and its screen read back, as a person would.
type pane struct {
	t    testing.TB
	sock string
}

// newPane starts a private tmux server whose one pane, width x height,
// runs command in dir with exactly env; it is killed at the test's end.
// Without tmux the test is skipped.
func newPane(t testing.TB, dir string, env []string, width, height int, command string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): the screen tests drive the chat through a tmux pane")
	}
	p := &pane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	shell := "env -i " + strings.Join(quoteAll(env), " ") + " " + command
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-c", dir, shell)
	t.Cleanup(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return out
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-u", "-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys types keys (tmux key names: Enter, Tab, C-r, or literal text).
func (p *pane) keys(keys ...string) { p.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...) }

// text types s literally.
func (p *pane) text(s string) { p.tmux("send-keys", "-t", "t", "-l", s) }

// paste pastes s as a terminal does with bracketed paste on.
func (p *pane) paste(s string) {
	p.tmux("set-buffer", "-b", "paste", s)
	p.tmux("paste-buffer", "-p", "-d", "-b", "paste", "-t", "t")
}

// screen is what the pane shows and scrolled away, wrapped lines joined.
func (p *pane) screen() string {
	out, _ := exec.Command("tmux", "-u", "-S", p.sock, "capture-pane", "-p", "-J", "-S", "-", "-t", "t").Output()
	return string(out)
}

// waitFor waits until the screen satisfies ok, failing with the screen
// after 30 s.
func (p *pane) waitFor(what string, ok func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %s:\n%s", what, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitText waits until the screen shows text.
func (p *pane) waitText(text string) string {
	p.t.Helper()
	return p.waitFor(fmt.Sprintf("%q", text), func(s string) bool { return strings.Contains(s, text) })
}

// editor is the prompt's line(s): from the last "› " or "? " line up to the
// status line.
func editor(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "› ") || strings.HasPrefix(lines[i], "? ") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return ""
}

func screenEnv(srv *llmtest.Server) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "TERM=xterm-256color", "LANG=C.UTF-8",
		"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test", "HERMES_BACKOFF_BASE=1ms"}
}

// lastUser is the last user message a model request carried.
func lastUser(r llmtest.Request) string {
	msgs := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// cuts counts the answers to "capital of France?".
var cuts atomic.Int32

// screenRoute answers the screen tests' conversations.
func screenRoute(r llmtest.Request) *llmtest.Reply {
	msgs := r.Body["messages"].([]any)
	sys, _ := msgs[0].(map[string]any)["content"].(string)
	last := msgs[len(msgs)-1].(map[string]any)
	if strings.Contains(sys, "Name the conversation") {
		return &llmtest.Reply{Content: "Greeting The Human", Prompt: 60, Completion: 4}
	}
	if last["role"] == "tool" {
		return &llmtest.Reply{Content: "Cleaned."}
	}
	switch content, _ := last["content"].(string); {
	case content == "hello":
		return &llmtest.Reply{Content: "Hello, **human**.", Prompt: 20, Completion: 4}
	case content == "capital of France?":
		if cuts.Add(1) == 1 { // the first answer is cut mid-stream
			return &llmtest.Reply{Content: "The capital of France is a city that", CutAfter: 3}
		}
		return &llmtest.Reply{Content: "It is Paris."}
	case strings.HasPrefix(content, "clean the build"):
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Args: `{"command":"rm -rf build"}`}}}
	default:
		return &llmtest.Reply{Content: fmt.Sprintf("Got %d lines.", strings.Count(content, "\n")+1)}
	}
}

// TestScreenChat drives `hermes chat` on a terminal (a tmux pane) as a
// person would: it types, pastes three lines with bracketed paste,
// completes a command with Tab, finds an earlier message with Ctrl-R,
// answers an approval in the editor, takes a turn back with /undo and
// leaves; then it checks the screen, the events and the history file.
func TestScreenChat(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(screenRoute)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(wd, "build"), 0o755)
	p := newPane(t, wd, screenEnv(srv), 110, 45, fmt.Sprintf("%s --home %s chat --model m; echo exit=$? > %s/exit; sleep 60", bin, home, home))

	s := p.waitText("/help lists the commands")
	id := strings.Fields(strings.SplitN(s, "session ", 2)[1])[0]
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })

	// A message and its answer, rendered from Markdown (no ** left).
	p.text("hello")
	p.waitFor("what was typed", func(s string) bool { return strings.HasPrefix(editor(s), "› hello") })
	p.keys("Enter")
	p.waitFor("the answer rendered from Markdown", func(s string) bool {
		return strings.Contains(s, "Hello, human.") && !strings.Contains(s, "**human**")
	})
	// The auxiliary model titles the session after the first exchange.
	p.waitText("“Greeting The Human”")
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, "Greeting The Human") {
		t.Fatalf("sessions list does not show the title:\n%s", out)
	}

	// Three pasted lines are one message, in order.
	p.paste("line one\nline two\nline three")
	p.waitFor("the paste in the editor", func(s string) bool {
		e := editor(s)
		return strings.Contains(e, "line one") && strings.Contains(e, "line three")
	})
	p.keys("Enter")
	p.waitText("Got 3 lines.")

	// A stream cut mid-answer: what was shown is said to be void, and the
	// retry's answer starts fresh below.
	p.text("capital of France?")
	p.keys("Enter")
	s = p.waitText("It is Paris.")
	void, retry, answer := strings.Index(s, "partial answer is discarded"), strings.Index(s, "↻ retrying"), strings.Index(s, "It is Paris.")
	if void < 0 || retry < void || answer < retry {
		t.Fatalf("the discarded answer is not told apart from the retry's:\n%s", s)
	}

	// Tab completes a command.
	p.text("/he")
	p.keys("Tab")
	p.waitFor("/help completed", func(s string) bool { return strings.HasPrefix(editor(s), "› /help") })
	p.keys("Enter")
	p.waitText("/undo [N]")

	// Ctrl-R finds the newest match ("/help"), then the one before; Enter
	// sends it.
	p.keys("C-r")
	p.text("hel")
	p.waitText("(reverse-i-search)'hel': /help")
	p.keys("C-r")
	p.waitText("(reverse-i-search)'hel': hello")
	p.keys("Enter")
	p.waitFor("the second answer", func(s string) bool { return strings.Count(s, "Hello, human.") == 2 })

	// An approval is asked in the editor; an unclear answer is asked again.
	p.text("clean the build")
	p.keys("Enter")
	p.waitText("answer: once / session / always / deny")
	p.text("yse")
	p.keys("Enter")
	p.waitText(`"yse" is not an answer`)
	p.text("once")
	p.keys("Enter")
	p.waitText("Cleaned.")
	if _, err := os.Stat(filepath.Join(wd, "build")); err == nil {
		t.Fatal("the approved command did not run")
	}

	// /undo: the chat goes on in a fork before the last message, which
	// comes back to the editor.
	p.text("/undo")
	p.keys("Enter")
	s = p.waitText("undid 1 turn(s)")
	p.waitFor("the message back in the editor", func(s string) bool { return strings.HasPrefix(editor(s), "› clean the build") })
	fork := strings.Fields(strings.SplitN(s, "the chat goes on in session ", 2)[1])[0]
	fork = strings.TrimSuffix(fork, ",")

	p.keys("C-c") // clears the editor
	p.waitFor("the editor cleared", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	p.text("/exit")
	p.keys("Enter")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(home, "exit")); err == nil {
			if strings.TrimSpace(string(b)) != "exit=0" {
				t.Fatalf("hermes ended with %s\n%s", b, p.screen())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/exit did not end hermes:\n%s", p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The requests: the pasted message whole, in order.
	var sent []string
	for _, r := range srv.Requests() {
		if !strings.Contains(string(r.Raw), "Name the conversation") && lastUser(r) != "" {
			if len(sent) == 0 || sent[len(sent)-1] != lastUser(r) {
				sent = append(sent, lastUser(r))
			}
		}
	}
	if strings.Join(sent, "|") != "hello|line one\nline two\nline three|capital of France?|hello|clean the build" {
		t.Fatalf("messages sent: %q", sent)
	}

	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var users, titled []string
	aux := 0
	for _, r := range readAll(t, store, id) {
		switch e := r.(type) {
		case schema.UserMessageAdded:
			users = append(users, e.Content)
		case schema.SessionTitled:
			titled = append(titled, e.Title)
		case schema.AuxiliaryCallCompleted:
			if e.Purpose == "title_generation" && e.Usage.PromptTokens == 60 {
				aux++
			}
		}
	}
	if strings.Join(users, "|") != "hello|line one\nline two\nline three|capital of France?|hello|clean the build" {
		t.Fatalf("user messages recorded: %q", users)
	}
	if len(titled) != 1 || titled[0] != "Greeting The Human" || aux != 1 {
		t.Fatalf("titles %q, title calls %d", titled, aux)
	}
	// The fork holds the conversation up to before the undone message, and
	// the title.
	var shown []map[string]any
	json.Unmarshal([]byte(mustRun(t, home, "sessions", "show", fork, "--json")), &shown)
	if n := len(shown); n < 2 || shown[n-1]["content"] != "Hello, **human**." || shown[n-2]["content"] != "hello" {
		t.Fatalf("the fork's history: %v", shown)
	}
	if tree := mustRun(t, home, "sessions", "tree", id); !strings.Contains(tree, "[fork]") {
		t.Fatalf("tree:\n%s", tree)
	}
	if got := sessionTitle(context.Background(), store, fork); got != "Greeting The Human" {
		t.Fatalf("the fork's title %q", got)
	}
	// What was typed is kept for the next chat, a paste as one entry.
	h, err := os.ReadFile(filepath.Join(home, "history"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "\n+line one\n+line two\n+line three\n") || !strings.Contains(string(h), "\n+/undo\n") {
		t.Fatalf("history file:\n%s", h)
	}
}

func readAll(t *testing.T, store events.Store, id string) []schema.Payload {
	t.Helper()
	rs, err := store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.Payload
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// sessions rename titles a session (sessions list shows it), and refuses
// one a chat runs, naming /title.
func TestSessionsRename(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	sid := "00000000-0000-4000-8000-0000000000bb"
	seed(t, s, sid, 1)
	s.Close()
	out := mustRun(t, home, "sessions", "rename", sid[:8], "Quarterly", "report")
	if !strings.Contains(out, `"Quarterly report"`) {
		t.Fatal(out)
	}
	if list := mustRun(t, home, "sessions", "list"); !strings.Contains(list, "Quarterly report") {
		t.Fatalf("list:\n%s", list)
	}
	lease, err := session.NewFileLeases(filepath.Join(home, "locks"), session.ThisProcess()).Lease(sid)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if _, errOut, err := run(t, home, "sessions", "rename", sid, "Other"); err == nil || !strings.Contains(errOut, "/title Other") {
		t.Fatalf("a running session was renamed: %v %s", err, errOut)
	}
}

// A person typing plain lines (--plain on a terminal) gets a generated
// title as on the screen; auxiliary.title_generation.enabled: false turns
// it off; a script (-q) never asks for one.
func TestPlainChatTitles(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(screenRoute)
	defer srv.Close()
	titleCalls := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if strings.Contains(string(r.Raw), "Name the conversation") {
				n++
			}
		}
		return n
	}
	home, wd := t.TempDir(), t.TempDir()
	p := newPane(t, wd, screenEnv(srv), 100, 30, fmt.Sprintf("%s --home %s chat --plain --model m; echo exit=$? > %s/exit; sleep 60", bin, home, home))
	p.waitText("commands:")
	p.text("hello")
	p.keys("Enter")
	p.waitText("Hello, **human**.")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(mustRun(t, home, "sessions", "list"), "Greeting The Human") {
		if time.Now().After(deadline) {
			t.Fatalf("the plain chat was not titled:\n%s", mustRun(t, home, "sessions", "list"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.text("/exit")
	p.keys("Enter")
	if n := titleCalls(); n != 1 {
		t.Fatalf("%d title calls", n)
	}

	// -q: no title call.
	if _, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "hello"); code != 0 {
		t.Fatalf("-q: %d %s", code, errOut)
	}
	// Disabled in config.yaml: no title call either.
	off := t.TempDir()
	os.WriteFile(filepath.Join(off, "config.yaml"), []byte("auxiliary:\n  title_generation:\n    enabled: false\n"), 0o600)
	q := newPane(t, wd, screenEnv(srv), 100, 30, fmt.Sprintf("%s --home %s chat --plain --model m; echo exit=$? > %s/exit; sleep 60", bin, off, off))
	q.waitText("commands:")
	q.text("hello")
	q.keys("Enter")
	q.waitText("Hello, **human**.")
	q.text("/exit")
	q.keys("Enter")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(off, "exit")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/exit did not end hermes:\n%s", q.screen())
		}
	}
	if n := titleCalls(); n != 1 {
		t.Fatalf("%d title calls after -q and a chat with titles off", n)
	}
}

// TestScreenEverydayCommands drives the chat screen in a tmux pane: /copy
// puts the last answer on the clipboard with OSC 52 (tmux keeps it as a
// buffer), /usage after /undo counts the conversation's calls, sessions
// list shows the conversation once, /sessions numbers it and /clear
// starts a new one, keeping it. It starts as `hermes -m m`: hermes alone
// on a terminal is the chat screen.
func TestScreenEverydayCommands(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(screenRoute)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	p := newPane(t, wd, screenEnv(srv), 110, 45, fmt.Sprintf("%s --home %s -m m; echo exit=$? > %s/exit; sleep 60", bin, home, home))
	p.tmux("set-option", "-g", "set-clipboard", "on")
	p.waitText("/help lists the commands")
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	typed := func(line string) {
		p.text(line)
		p.waitFor(fmt.Sprintf("%q typed", line), func(s string) bool { return strings.HasPrefix(editor(s), "› "+line) })
		p.keys("Enter")
	}
	typed("hello")
	p.waitText("Hello, human.")
	p.waitText("“Greeting The Human”")

	typed("/copy")
	p.waitText("copied 17 characters")
	p.waitFor("the answer in tmux's buffer", func(string) bool {
		out, _ := exec.Command("tmux", "-S", p.sock, "show-buffer").Output()
		return string(out) == "Hello, **human**."
	})

	typed("/undo")
	p.waitText("undid 1 turn(s)")
	p.waitFor("the message back in the editor", func(s string) bool { return strings.HasPrefix(editor(s), "› hello") })
	p.keys("C-c")
	p.waitFor("the editor cleared", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	typed("/usage")
	s := p.waitText("model calls over 2 sessions")
	if strings.Contains(s, ": 0 model calls") {
		t.Fatalf("/usage after /undo counts nothing:\n%s", s)
	}
	list := strings.Split(strings.TrimSpace(mustRun(t, home, "sessions", "list")), "\n")
	if len(list) != 2 || !strings.Contains(list[1], "Greeting The Human (+1 branch)") {
		t.Fatalf("sessions list after /undo:\n%s", strings.Join(list, "\n"))
	}
	id := strings.Fields(list[1])[0]

	typed("/clear")
	p.waitText("the conversation before is kept")
	// The erase goes with the screen's next frame.
	deadline := time.Now().Add(10 * time.Second)
	for visible := ""; ; time.Sleep(25 * time.Millisecond) {
		visible = p.tmux("capture-pane", "-p", "-t", "t")
		if !strings.Contains(visible, "Hello, human.") && !strings.Contains(visible, "undid 1 turn") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/clear left the conversation on the screen:\n%s", visible)
		}
	}
	typed("/sessions")
	p.waitText("1. Greeting The Human (+1 branch)")
	typed("/sessions 1")
	p.waitText("session: " + id)
	typed("/exit")
	deadline = time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(home, "exit")); err == nil {
			if strings.TrimSpace(string(b)) != "exit=0" {
				t.Fatalf("hermes ended with %s\n%s", b, p.screen())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/exit did not end hermes:\n%s", p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// longAnswer is an answer far longer than the terminal of the screen
// tests below: sixty paragraphs.
func longAnswer() string {
	var paras []string
	for i := 1; i <= 60; i++ {
		paras = append(paras, fmt.Sprintf("Paragraph %02d.", i))
	}
	return strings.Join(paras, "\n\n")
}

// longRoute answers TestScreenLongAnswerInterruptToolOrderAndRecap.
func longRoute(r llmtest.Request) *llmtest.Reply {
	msgs := r.Body["messages"].([]any)
	sys, _ := msgs[0].(map[string]any)["content"].(string)
	last := msgs[len(msgs)-1].(map[string]any)
	if strings.Contains(sys, "Name the conversation") {
		return &llmtest.Reply{Content: "Long Talk"}
	}
	if last["role"] == "tool" {
		return &llmtest.Reply{Content: "Read all three."}
	}
	// (the message after an interrupted turn carries the interrupted one)
	switch user := lastUser(r); {
	case user == "long please":
		return &llmtest.Reply{Content: longAnswer()}
	case user == "slow please":
		return &llmtest.Reply{Content: "too late", Delay: 30 * time.Second}
	case strings.HasSuffix(user, "three files"):
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "r1", Name: "read_file", Args: `{"path":"first.txt"}`},
			{ID: "r2", Name: "read_file", Args: `{"path":"second.txt"}`}, {ID: "r3", Name: "read_file", Args: `{"path":"third.txt"}`}}}
	}
	return &llmtest.Reply{Content: "ok"}
}

// blankRun is the longest run of blank lines in s.
func blankRun(s string) int {
	run, longest := 0, 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// The chat screen on a small terminal (80x24): an answer longer than the
// terminal lands in the scrollback whole and in order (it used to leave
// the prompt and dozens of blank lines in it, with its tail above its
// start); "interrupting…" goes when the interrupted turn has ended;
// parallel tool calls are drawn in the order the model made them (they
// were drawn newest first); and --continue opens on the last exchanges of
// the conversation instead of an empty screen.
func TestScreenLongAnswerInterruptToolOrderAndRecap(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(longRoute)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	for _, f := range []string{"first.txt", "second.txt", "third.txt"} {
		os.WriteFile(filepath.Join(wd, f), []byte(f+"\n"), 0o644)
	}
	p := newPane(t, wd, screenEnv(srv), 80, 24, fmt.Sprintf("%s --home %s chat --model m; echo exit=$? > %s/exit; sleep 60", bin, home, home))
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })

	p.text("long please")
	p.keys("Enter")
	s := p.waitFor("the whole answer and the turn ended", func(s string) bool {
		return strings.Contains(s, "Paragraph 60.") && strings.Contains(editor(s), "Message Hermes") && !strings.Contains(s, "Ctrl-C interrupts")
	})
	asked := strings.Index(s, "› long please")
	answer := s[asked:strings.Index(s, "Paragraph 60.")]
	at := 0
	for i := 1; i <= 59; i++ {
		j := strings.Index(answer[at:], fmt.Sprintf("Paragraph %02d.", i))
		if j < 0 {
			t.Fatalf("paragraph %d missing or out of order:\n%s", i, s)
		}
		at += j
	}
	if n := blankRun(answer); n > 2 || strings.Contains(answer, "thinking…") || strings.Contains(answer, "Message Hermes") {
		t.Fatalf("the long answer is scrambled (%d blank lines in a row, or the prompt in it):\n%s", n, s)
	}

	p.text("slow please")
	p.keys("Enter")
	p.waitFor("the turn running", func(s string) bool { return strings.Contains(s, "Ctrl-C interrupts") })
	p.keys("C-c")
	p.waitText("[interrupted]")
	p.waitFor("the interrupt note gone", func(s string) bool {
		e := editor(s)
		return strings.Contains(e, "Message Hermes") && !strings.Contains(e, "interrupting")
	})
	time.Sleep(300 * time.Millisecond) // and gone for good, not between two frames
	if e := editor(p.screen()); strings.Contains(e, "interrupting") {
		t.Fatalf("the interrupt note stays after the turn ended:\n%s", e)
	}

	p.text("three files")
	p.keys("Enter")
	s = p.waitText("Read all three.")
	first, second, third := strings.Index(s, "⚙ read_file  first.txt"), strings.Index(s, "⚙ read_file  second.txt"), strings.Index(s, "⚙ read_file  third.txt")
	if first < 0 || second < first || third < second {
		t.Fatalf("parallel calls not drawn in call order (%d %d %d):\n%s", first, second, third, s)
	}
	p.text("/exit")
	p.keys("Enter")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(home, "exit")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/exit did not end hermes:\n%s", p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// --continue opens on the last three exchanges: what was asked, the
	// tool calls and the answers, rendered as they were.
	p = newPane(t, wd, screenEnv(srv), 80, 24, fmt.Sprintf("%s --home %s chat --model m --continue; sleep 60", bin, home))
	s = p.waitFor("the recap and the editor", func(s string) bool {
		return strings.Contains(s, "resumed: the conversation goes on below") && strings.Contains(editor(s), "Message Hermes")
	})
	order := []string{"› long please", "Paragraph 01.", "Paragraph 06.", "more lines: /history shows them", "› slow please", "› three files",
		`⚙ read_file {"path":"first.txt"}`, `⚙ read_file {"path":"third.txt"}`, "Read all three.", "resumed: the conversation goes on below", "Message Hermes"}
	at = 0
	for _, want := range order {
		j := strings.Index(s[at:], want)
		if j < 0 {
			t.Fatalf("the recap lacks %q (or has it out of order):\n%s", want, s)
		}
		at += j
	}
	if strings.Contains(s, "Paragraph 07.") {
		t.Fatalf("the recap shows more than the first lines of a long answer:\n%s", s)
	}
	// With a fourth exchange, the first is left out and counted.
	p.text("once more")
	p.keys("Enter")
	p.waitFor("the answer", func(s string) bool { return strings.Contains(s, "› once more") && strings.Count(s, "  ok") == 1 })
	p.text("/exit")
	p.keys("Enter")
	p = newPane(t, wd, screenEnv(srv), 80, 24, fmt.Sprintf("%s --home %s chat --model m --continue; sleep 60", bin, home))
	s = p.waitText("resumed: the conversation goes on below")
	if !strings.Contains(s, "… 1 earlier message (") || strings.Contains(s, "long please") || !strings.Contains(s, "› once more") {
		t.Fatalf("the recap of the last three of four exchanges:\n%s", s)
	}
}

// On the chat screen too, a model server that takes the request and never
// answers is said not to have answered yet within seconds, and the turn
// fails after the first-byte timeout naming the server.
func TestScreenServerThatNeverAnswers(t *testing.T) {
	host := silentListener(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "TERM=xterm-256color", "LANG=C.UTF-8",
		"OPENAI_BASE_URL=http://" + host + "/v1", "OPENAI_API_KEY=sk-test", "HERMES_FIRST_BYTE_TIMEOUT=2"}
	home, wd := t.TempDir(), t.TempDir()
	p := newPane(t, wd, env, 100, 30, fmt.Sprintf("%s --home %s chat --model m; sleep 60", bin, home))
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	p.text("hello")
	p.keys("Enter")
	s := p.waitText("no answer from " + host + " in 2s")
	if notice := strings.Index(s, "no answer from "+host+" yet ("); notice < 0 || notice > strings.Index(s, "no answer from "+host+" in 2s") {
		t.Fatalf("no early notice before the error:\n%s", s)
	}
}
