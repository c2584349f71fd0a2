package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
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
		"error: /undo is not available here, only in the chat screen: /help lists the commands here",
		"1 model calls",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// /help and /start, /new and /reset: twice each.
	if n := strings.Count(errOut, "commands:\n"); n != 2 {
		t.Errorf("help shown %d times, want 2 (/help, /start)", n)
	}
	if !strings.Contains(out, "That path is fine.") || len(srv.Requests()) != 1 {
		t.Errorf("the line starting with a path was not sent as a message: %q, %d requests", out, len(srv.Requests()))
	}
}
