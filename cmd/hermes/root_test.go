package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events/embedded"
)

// The in-process tests below run the command tree in this process, on
// buffers, with a temporary home: each takes milliseconds, where the
// black-box tests (cli_test.go and the others) run the built binary.

// execute runs `hermes args...` in this process with stdin in, returning
// what it wrote to stdout and stderr.
func execute(t *testing.T, in string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	f := &app.Factory{IO: app.IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &errb}}
	root := newRoot(f)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// inHome runs `hermes --home home args...` in this process.
func inHome(t *testing.T, home string, args ...string) (string, string, error) {
	t.Helper()
	return execute(t, "", append([]string{"--home", home}, args...)...)
}

// quietEnv empties the variables that choose the home, the store, the
// model and the sandbox, so that the machine's do not decide a test.
func quietEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HERMES_HOME", "HERMES_STORE", "HERMES_MODEL", "HERMES_SANDBOX"} {
		t.Setenv(k, "")
	}
}

// seededHome is a temporary home whose embedded store holds the sessions
// sids, each of turns exchanges.
func seededHome(t *testing.T, turns int, sids ...string) string {
	t.Helper()
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range sids {
		seed(t, s, sid, turns)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return home
}

// Errors in flags and arguments are cobra's or ours, said before anything
// is opened.
func TestFlagErrorsInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "list", "--limit", "many"}, `invalid argument "many" for "--limit"`},
		{[]string{"sessions", "show"}, "accepts 1 arg(s), received 0"},
		{[]string{"sessions", "list", "--colour"}, "unknown flag: --colour"},
		{[]string{"cron", "add", "--schedule", "every 1h", "--prompt", "p", "--timeout", "5"}, `--timeout "5": use a duration such as 10m`},
		{[]string{"--log-level", "loud", "sessions", "list"}, `--log-level "loud": use trace, debug, info, warn or error`},
		{[]string{"--store", "mysql://u:pw@h/db", "sessions", "list"}, `--store: unknown store "mysql://u:xxxxx@h/db"`},
		{[]string{"config", "set", "agent.max_turn", "3"}, "did you mean agent.max_turns?"},
	} {
		_, _, err := inHome(t, home, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hermes %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// A mistyped command exits 1 saying what was meant, at the top and in a
// group; a group alone and --help still show help.
func TestUnknownCommandInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chatt"}, `unknown command "chatt" for "hermes": did you mean hermes chat?`},
		{[]string{"sessions", "lst"}, `unknown command "lst" for "hermes sessions": did you mean hermes sessions list?`},
		{[]string{"sessions", "sh"}, `did you mean hermes sessions show?`},
		{[]string{"cron", "frobnicate"}, `unknown command "frobnicate" for "hermes cron": hermes cron --help lists its commands`},
		{[]string{"config", "st", "x"}, `did you mean hermes config set?`},
	} {
		_, _, err := inHome(t, home, c.args...)
		var ee *exitError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ee) || ee.code != 1 {
			t.Errorf("hermes %s: %v, want exit 1 with %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	for _, args := range [][]string{{"--help"}, {"sessions"}, {"sessions", "--help"}, {"help", "sessions"}} {
		out, _, err := inHome(t, home, args...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("hermes %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, _, _ := inHome(t, home, "--help"); !strings.Contains(out, "-m, --model") || !strings.Contains(out, "-V, --version") || !strings.Contains(out, "sessions") {
		t.Errorf("hermes --help:\n%s", out)
	}
}

// hermes alone is a chat, as hermes chat: with stdin not a terminal, the
// plain chat that reads lines; -m names the model there and on chat.
func TestHermesAloneChatsInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "hello there"})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home := t.TempDir()
	out, errOut, err := execute(t, "hi\n/usage\n", "--home", home, "-m", "alone-model")
	if err != nil || !strings.Contains(out, "hello there") || !strings.Contains(errOut, "commands: /help") || !strings.Contains(errOut, "1 model calls") {
		t.Fatalf("hermes alone: %v\n%s\n%s", err, out, errOut)
	}
	if m, _ := srv.Requests()[0].Body["model"].(string); m != "alone-model" {
		t.Fatalf("-m: asked for %q", m)
	}
	// -c continues the last conversation, as Hermes' does.
	first := sessionIDFrom(t, errOut)
	if _, errOut, err := execute(t, "more\n", "--home", home, "-c", "-m", "alone-model"); err != nil || sessionIDFrom(t, errOut) != first {
		t.Fatalf("hermes -c: %v\n%s", err, errOut)
	}
	if out, _, err := inHome(t, home, "chat", "-m", "chat-model", "-q", "hi", "--quiet"); err != nil || out != "hello there\n" {
		t.Fatalf("chat -m: %q %v", out, err)
	}
	reqs := srv.Requests()
	if m, _ := reqs[len(reqs)-1].Body["model"].(string); m != "chat-model" {
		t.Fatalf("chat -m: asked for %q", m)
	}
}
