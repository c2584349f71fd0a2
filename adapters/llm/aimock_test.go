package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// startAimock runs @copilotkit/aimock, a third-party OpenAI and Anthropic
// mock, with fixtures, so our providers are checked against a wire format
// someone else implemented (.ci/run installs it and sets HERMES_AIMOCK).
func startAimock(t *testing.T, fixtures string) string {
	t.Helper()
	bin := os.Getenv("HERMES_AIMOCK")
	if bin == "" {
		t.Skip("HERMES_AIMOCK is not set: the aimock mock is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "fixtures.json")
	if err := os.WriteFile(f, []byte(fixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-p", fmt.Sprint(port), "-h", "127.0.0.1", "-f", f, "--strict")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatalf("aimock did not start: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

type lsTool struct{ calls *int }

func (lsTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "run a command", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}}}
}
func (lsTool) Flags() tool.Flags { return tool.Flags{} }
func (l lsTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	*l.calls++
	var a struct{ Command string }
	json.Unmarshal(args, &a)
	if a.Command != "ls" {
		return "", fmt.Errorf("unexpected command %q", a.Command)
	}
	return "a.txt\nb.txt", nil
}

type rec struct{ ps []schema.Payload }

func (r *rec) Record(_ context.Context, _ string, ps ...schema.Payload) error {
	r.ps = append(r.ps, ps...)
	return nil
}

const fixtures = `{"fixtures": [
  {"match": {"userMessage": "list the files", "sequenceIndex": 0},
   "response": {"toolCalls": [{"name": "terminal", "arguments": {"command": "ls"}}]}},
  {"match": {"userMessage": "list the files", "sequenceIndex": 1},
   "response": {"content": "There are two files: a.txt and b.txt."}}
]}`

// TestProvidersAgainstAimock runs a tool-calling turn through each API
// mode against aimock's implementation of the wire formats.
func TestProvidersAgainstAimock(t *testing.T) {
	for _, mode := range []string{model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses} {
		t.Run(mode, func(t *testing.T) {
			base := startAimock(t, fixtures)
			if mode != model.ModeAnthropic {
				base += "/v1"
			}
			p, err := llm.New(llm.Config{APIMode: mode, BaseURL: base, APIKey: "test-key"})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			r := &rec{}
			loop := &agent.Loop{Provider: p, Tools: tool.NewTools(lsTool{&calls}), Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Rec: r,
				Budget: tool.NewBudget(5), Cfg: agent.Config{Model: "gpt-4o-mini"}}
			out, err := loop.Turn(context.Background(), &history.Transcript{System: "You are Hermes."}, "t", "list the files")
			if err != nil {
				t.Fatal(err)
			}
			if out != "There are two files: a.txt and b.txt." || calls != 1 {
				t.Fatalf("answer %q after %d tool calls", out, calls)
			}
			var types []string
			for _, p := range r.ps {
				types = append(types, p.EventType())
			}
			if strings.Join(types, " ") != "UserMessageAdded AssistantMessageAdded ToolCallStarted ToolResultAdded AssistantMessageAdded TurnCompleted" {
				t.Fatalf("events %v", types)
			}
		})
	}
}
