package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// TestScreenHandlesEveryCommand walks the command table: the chat screen
// has a handler for each command the table offers it, Tab completes exactly
// those, and a command it does not offer is explained.
func TestScreenHandlesEveryCommand(t *testing.T) {
	sc := &screenChat{}
	var names []string
	for _, c := range command.Screen.Commands() {
		if sc.handler(&c) == nil {
			t.Errorf("the chat screen has no handler for %s", c.Name)
		}
		names = append(names, c.Name)
	}
	var completed []string
	for _, c := range screenCommands() {
		completed = append(completed, c.Name)
	}
	if !slices.Equal(names, completed) {
		t.Errorf("Tab completes %v, the table offers %v", completed, names)
	}
	cmd, arg, ok := command.Screen.Parse("/approve now")
	if !ok || cmd.ID != command.Unknown || arg != "now" {
		t.Fatalf("Parse(/approve now) = %+v %q %v", cmd, arg, ok)
	}
	var unknown *command.UnknownError
	if err := sc.handler(cmd)(arg); !errors.As(err, &unknown) || !strings.Contains(err.Error(), "only in the messaging gateway") {
		t.Errorf("/approve on the screen: %v", err)
	}
	if err := sc.handler(&command.Command{ID: command.Exit})(""); !errors.Is(err, errLeave) {
		t.Errorf("/exit: %v", err)
	}
}

// TestPlainChatCommands types every command the table offers plain chat,
// under each of its names, into a real chat: each has a handler, /help is
// the table's, unknown commands are explained, and a line starting with a
// path is a message.
func TestPlainChatCommands(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "That path is fine."})
	defer srv.Close()
	var script strings.Builder
	for _, c := range command.Plain.Commands() {
		if c.ID == command.Exit {
			continue
		}
		for _, name := range append([]string{c.Name}, c.Aliases...) {
			script.WriteString(name + "\n")
		}
	}
	script.WriteString("/etc/hosts is empty\n/hepl\n/undo\n/Usage\n/quit\n")
	out, errOut, code := hermes(t, chatEnv(srv), script.String(), "--home", t.TempDir(), "chat", "--model", "m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "no handler") {
		t.Errorf("a command of the table has no handler in plain chat:\n%s", errOut)
	}
	for _, want := range []string{
		"commands: " + command.Plain.Brief() + "  (Ctrl-C stops a turn; Ctrl-D exits)",
		"commands:\n" + command.Plain.Help() + "\n",
		"usage: /resume ID",
		"error: unknown command /hepl: did you mean /help? /help lists the commands",
		"error: nothing to undo: no message was sent in this session yet",
		"undid 1 turn(s): the chat goes on in session ",
		"taken back: /etc/hosts is empty",
		"1 model calls over 2 sessions",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// /help, /start and /commands.
	if n := strings.Count(errOut, "commands:\n"); n != 3 {
		t.Errorf("help shown %d times, want 3 (/help, /start, /commands)", n)
	}
	if !strings.Contains(out, "That path is fine.") || len(srv.Requests()) != 1 {
		t.Errorf("the line starting with a path was not sent as a message: %q, %d requests", out, len(srv.Requests()))
	}
}

// The everyday commands in plain chat, in process: /personality takes one
// on (sent with the next message, not recorded), /verbose cycles, /new
// titles, /sessions numbers the conversations and continues one by
// number, /config and /insights report, /copy explains it needs a
// terminal, /clear starts a new conversation.
func TestPlainChatEverydayCommandsInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "Answered."})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nagent:\n  personalities:\n    pirate: Speak like a pirate.\n    mentor:\n      system_prompt: You guide.\n      description: asks first\n"), 0o600)
	script := strings.Join([]string{
		"/personality", "/personality pirate", "first question",
		"/personality none", "/verbose", "/verbose", "/verbose loud",
		"/new Second topic", "second question",
		"/sessions", "/sessions 2", "/sessions 9", "/config", "/insights", "/insights x", "/copy", "/model", "/version",
		"/clear", "/usage",
	}, "\n") + "\n"
	_, errOut, err := execute(t, script, "--home", home, "chat")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		" none  no personality\n   mentor  asks first\n   pirate  Speak like a pirate.",
		`personality pirate from the next turn, for this chat: "Speak like a pirate."`,
		"no personality from the next turn",
		"verbose verbose: tool calls show with their arguments and results in full",
		"verbose off: tool calls do not show",
		"error: usage: /verbose [off|new|all|verbose] (now off)",
		"recent conversations (/sessions N continues number N):\n * 1. Second topic",
		"\n   2. first question",
		"error: /sessions showed 2 conversations, not 9",
		"# this chat: model m, personality none, tool calls off",
		"model calls    2:",
		"error: usage: /insights [DAYS]",
		"error: /copy reaches the clipboard through the terminal (OSC 52)",
		"model: m\n/model NAME switches this chat",
		versionLine(),
		"0 model calls",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Raw), "Speak like a pirate.") || strings.Contains(string(reqs[1].Raw), "pirate") {
		t.Fatalf("the persona went with the first message alone: %d requests", len(reqs))
	}
	// /sessions 2 went back to the first conversation; /clear left it.
	if n := strings.Count(errOut, "session: "); n != 5 {
		t.Errorf("%d session lines, want 5 (start, /new, /sessions 2, /clear)", n)
	}
}

// /verbose's modes filter what a chat shows of tool calls.
func TestToolView(t *testing.T) {
	var v toolView
	var shown, details []string
	obs := v.observer(func(o agent.Observation) { shown = append(shown, o.Kind+":"+o.Tool) }, func(s string) { details = append(details, s) })
	calls := func() {
		shown, details = nil, nil
		for i, tool := range []string{"terminal", "terminal", "read_file"} {
			id := fmt.Sprint(i)
			obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: tool, ID: id, Text: `{"x":1}`})
			obs(agent.Observation{Kind: agent.ObserveToolEnd, Tool: tool, ID: id, Text: "ok"})
		}
		obs(agent.Observation{Kind: agent.ObserveDelta, Text: "answer"})
	}
	for _, c := range []struct {
		arg, mode, shown string
		details          int
	}{
		{"", "verbose", "tool_start:terminal tool_end:terminal tool_start:terminal tool_end:terminal tool_start:read_file tool_end:read_file delta:", 6},
		{"", "off", "delta:", 0},
		{"", "new", "tool_start:terminal tool_end:terminal tool_start:read_file tool_end:read_file delta:", 0},
		{"", "all", "tool_start:terminal tool_end:terminal tool_start:terminal tool_end:terminal tool_start:read_file tool_end:read_file delta:", 0},
		{"all", "all", "tool_start:terminal tool_end:terminal tool_start:terminal tool_end:terminal tool_start:read_file tool_end:read_file delta:", 0},
	} {
		m, err := v.set(c.arg)
		if err != nil || m.String() != c.mode {
			t.Fatalf("set(%q) = %v %v, want %s", c.arg, m, err, c.mode)
		}
		v.last = ""
		calls()
		if got := strings.Join(shown, " "); got != c.shown || len(details) != c.details {
			t.Errorf("%s: shown %q, %d details; want %q, %d", c.mode, got, len(details), c.shown, c.details)
		}
	}
	if _, err := v.set("loud"); err == nil {
		t.Error("set(loud) accepted")
	}
	if got := osc52("hi"); got != "\x1b]52;c;aGk=\a" {
		t.Errorf("osc52: %q", got)
	}
}

// /retry and /undo in plain chat: the message goes again in a fork, /usage
// counts the calls before the fork too, and sessions list shows the
// conversation once.
func TestPlainChatRetryAndUndoInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "Answered."})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home := t.TempDir()
	_, errOut, err := execute(t, "greeting\n/retry\n/undo 5\n/usage\n", "--home", home, "chat", "-m", "m")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || lastUser(reqs[1]) != "greeting" {
		t.Fatalf("/retry did not send the message again: %d requests\n%s", len(reqs), errOut)
	}
	for _, want := range []string{"› greeting\n", "undid 1 turn(s)", "taken back: greeting", "2 model calls over 3 sessions"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, _, err := inHome(t, home, "sessions", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 || !strings.Contains(lines[1], "(+2 branches)") {
		t.Fatalf("sessions list: %v\n%s", err, out)
	}
}

// /model completes the models config.yaml names.
func TestModelCompletion(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model:\n  default: main-model\nfallback_providers:\n  - {default: backup-model, provider: openrouter}\nauxiliary:\n  compression: small-model\n"), 0o600)
	file, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range screenCommands(configuredModels(file)...) {
		if c.Name == "/model" && strings.Join(c.Words, ",") != "--global,main-model,small-model,backup-model" {
			t.Fatalf("/model completes %v", c.Words)
		}
	}
}

// /model NAME --global saves the model in config.yaml, keeping the
// provider of a model: mapping; without --global it is the chat's alone.
func TestModelGlobalInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "ok"})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	os.WriteFile(path, []byte("model:\n  default: first-model\n  provider: openai  # mine\n"), 0o600)
	_, errOut, err := execute(t, "/model chat-only\n/model --global\n/model saved-model --global\nhi\n", "--home", home, "chat")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"model: chat-only (from the next turn)\n", "error: usage: /model NAME --global",
		"model: saved-model (from the next turn, and saved in " + path + ")"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "default: saved-model") || !strings.Contains(string(data), "provider: openai # mine") {
		t.Fatalf("config.yaml:\n%s", data)
	}
	if m, _ := srv.Requests()[0].Body["model"].(string); m != "saved-model" {
		t.Fatalf("asked for %q", m)
	}
}
