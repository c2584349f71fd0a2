package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type events struct {
	mu sync.Mutex
	l  []schema.HookRan
}

func (e *events) ctx() context.Context {
	return tool.WithEnv(context.Background(), &tool.Env{SessionID: "sess-1", TurnID: "turn-1", WorkingDir: "/work",
		Values: tool.NewSessionValues(), Record: func(_ context.Context, ps ...schema.Payload) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, p := range ps {
				e.l = append(e.l, p.(schema.HookRan))
			}
			return nil
		}})
}

func (e *events) decisions() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, h := range e.l {
		out = append(out, h.Event+":"+h.Decision)
	}
	return strings.Join(out, " ")
}

// fakeTool is a tool that counts its runs.
type fakeTool struct {
	name string
	runs int
	err  error
}

func (t *fakeTool) Spec() model.ToolSpec { return model.ToolSpec{Name: t.name} }
func (t *fakeTool) Flags() tool.Flags    { return tool.Flags{ReadOnly: true, Server: "srv"} }
func (t *fakeTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	t.runs++
	return "ran with " + string(args), t.err
}

func newRunner(t *testing.T, c Config) *Runner {
	t.Helper()
	r, err := New(c, Options{Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPreToolCallBlocks(t *testing.T) {
	for _, answer := range []string{`{"decision": "block", "reason": "no force pushes"}`, `{"action": "block", "message": "no force pushes"}`} {
		stdin := filepath.Join(t.TempDir(), "stdin.json")
		guard := script(t, fmt.Sprintf("cat > %s\necho '%s'", stdin, answer))
		r := newRunner(t, Config{PreToolCall: {{Command: guard, Matcher: "term.*"}}})
		term, other := &fakeTool{name: "terminal"}, &fakeTool{name: "read_file"}
		if r.Tool(other) != tool.Tool(other) {
			t.Fatal("a tool no matcher fits was wrapped")
		}
		wrapped := r.Tool(term)
		if f := wrapped.Flags(); f.Server != "srv" || !f.ReadOnly {
			t.Fatalf("flags lost: %+v", f)
		}
		ev := &events{}
		_, err := wrapped.Run(ev.ctx(), json.RawMessage(`{"command":"git push -f"}`))
		if err == nil || err.Error() != "blocked by a pre_tool_call hook: no force pushes" || term.runs != 0 {
			t.Fatalf("%s: %v, runs %d", answer, err, term.runs)
		}
		if ev.decisions() != "pre_tool_call:block" || ev.l[0].Reason != "no force pushes" || ev.l[0].Tool != "terminal" || ev.l[0].Command != guard {
			t.Fatalf("recorded: %+v", ev.l)
		}
		var got map[string]any
		data, _ := os.ReadFile(stdin)
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("stdin %q: %v", data, err)
		}
		want := map[string]any{"hook_event_name": "pre_tool_call", "tool_name": "terminal", "tool_input": map[string]any{"command": "git push -f"},
			"session_id": "sess-1", "cwd": "/work", "extra": map[string]any{"turn_id": "turn-1", "task_id": ""}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stdin:\n got %v\nwant %v", got, want)
		}
	}
}

func TestPostToolCallSeesTheResult(t *testing.T) {
	stdin := filepath.Join(t.TempDir(), "stdin.json")
	r := newRunner(t, Config{PostToolCall: {{Command: script(t, "cat > "+stdin)}}, PreToolCall: {{Command: script(t, "echo '{}'")}}})
	tl := &fakeTool{name: "web_search", err: errors.New("rate limited")}
	ev := &events{}
	out, err := r.Tool(tl).Run(ev.ctx(), json.RawMessage(`{"q":"go"}`))
	if out != `ran with {"q":"go"}` || err == nil || tl.runs != 1 {
		t.Fatalf("the tool's own result changed: %q, %v", out, err)
	}
	var got struct {
		Event string         `json:"hook_event_name"`
		Extra map[string]any `json:"extra"`
	}
	data, _ := os.ReadFile(stdin)
	json.Unmarshal(data, &got)
	if got.Event != "post_tool_call" || got.Extra["result"] != out || got.Extra["status"] != "error" || got.Extra["error_message"] != "rate limited" {
		t.Fatalf("post_tool_call got %s", data)
	}
	if ev.decisions() != "pre_tool_call:none post_tool_call:none" {
		t.Fatalf("recorded: %s", ev.decisions())
	}
}

// TestFailingHooksNeverBreakTheCall: a hook that times out, answers
// nonsense, exits non-zero without answering or cannot be run is
// recorded as failed; the call goes ahead.
func TestFailingHooksNeverBreakTheCall(t *testing.T) {
	cases := []struct {
		hook Hook
		why  string
	}{
		{Hook{Command: script(t, "sleep 5"), Timeout: 1}, "timed out after 1s"},
		{Hook{Command: script(t, "echo 'block it!'")}, "stdout is not a JSON object"},
		{Hook{Command: script(t, "echo oops >&2; exit 3")}, "exited 3: oops"},
		{Hook{Command: "/nonexistent/hook --flag"}, "could not run /nonexistent/hook"},
	}
	for _, c := range cases {
		r := newRunner(t, Config{PreToolCall: {c.hook}})
		tl := &fakeTool{name: "terminal"}
		ev := &events{}
		if _, err := r.Tool(tl).Run(ev.ctx(), json.RawMessage(`{}`)); err != nil || tl.runs != 1 {
			t.Fatalf("%s: %v, runs %d", c.hook.Command, err, tl.runs)
		}
		if len(ev.l) != 1 || ev.l[0].Decision != "failed" || !strings.Contains(ev.l[0].Reason, c.why) {
			t.Fatalf("%s: recorded %+v", c.hook.Command, ev.l)
		}
	}
	// A non-zero exit that answers is taken at its word.
	r := newRunner(t, Config{PreToolCall: {{Command: script(t, `echo '{"action":"block"}'; exit 1`)}}})
	if _, err := r.Tool(&fakeTool{name: "x"}).Run((&events{}).ctx(), nil); err == nil || !strings.Contains(err.Error(), "Blocked by shell hook.") {
		t.Fatalf("exit 1 with a block: %v", err)
	}
}

func TestTurnHooks(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, Config{
		OnSessionStart: {{Command: script(t, "cat > "+filepath.Join(dir, "start.json"))}},
		PreLLMCall: {{Command: script(t, `echo '{"context": "Today is Friday."}'`)}, {Command: script(t, `echo '{"context": "The build is red."}'`)},
			{Command: script(t, "cat > "+filepath.Join(dir, "llm.json"))}},
		OnSessionEnd: {{Command: script(t, "cat > "+filepath.Join(dir, "end.json"))}},
	})
	ev := &events{}
	got := r.TurnStarted(ev.ctx(), agent.TurnStart{SessionID: "sess-1", TurnID: "turn-1", Model: "m", UserText: "hello", First: true})
	if got != "Today is Friday.\n\nThe build is red." {
		t.Fatalf("context: %q", got)
	}
	r.TurnEnded(ev.ctx(), agent.TurnEnd{SessionID: "sess-1", TurnID: "turn-1", Model: "m", Completed: true})
	if d := ev.decisions(); d != "on_session_start:none pre_llm_call:context pre_llm_call:context pre_llm_call:none on_session_end:none" {
		t.Fatalf("recorded: %s", d)
	}
	read := func(name string) map[string]any {
		var m map[string]any
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %q", name, data)
		}
		return m["extra"].(map[string]any)
	}
	if x := read("llm.json"); x["user_message"] != "hello" || x["is_first_turn"] != true || x["platform"] != "cli" {
		t.Fatalf("pre_llm_call extra: %v", x)
	}
	if x := read("end.json"); x["completed"] != true || x["interrupted"] != false {
		t.Fatalf("on_session_end extra: %v", x)
	}
	ev2 := &events{}
	r.TurnStarted(ev2.ctx(), agent.TurnStart{SessionID: "sess-1", First: false})
	if strings.Contains(ev2.decisions(), "on_session_start") {
		t.Fatal("on_session_start ran on a later turn")
	}
}

func TestValidate(t *testing.T) {
	warn, err := Config{
		"pre_verify":     {{Command: "x"}},
		"output_spill":   nil,
		"pre_llm_call":   {{Command: "x", Matcher: "terminal"}},
		"pre_tool_call":  {{Command: "", Matcher: "("}, {Command: "'unclosed"}},
		"pre_tool_cal":   {{Command: "x"}},
		"on_session_end": {{Command: "x", Timeout: -1}},
	}.Validate()
	for _, w := range []string{"hooks.pre_verify: this build of hermes never fires pre_verify", "hooks.pre_llm_call[0].matcher: only tool hooks"} {
		if !strings.Contains(strings.Join(warn, "\n"), w) {
			t.Errorf("warnings %q lack %q", warn, w)
		}
	}
	for _, e := range []string{"hooks.pre_tool_call[0]: command is empty", "hooks.pre_tool_call[0].matcher", "hooks.pre_tool_call[1].command: unterminated",
		"hooks.pre_tool_cal: unknown hook event", "hooks.on_session_end[0].timeout"} {
		if err == nil || !strings.Contains(err.Error(), e) {
			t.Errorf("errors %v lack %q", err, e)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		`python3 /path/hook.py`:                  {"python3", "/path/hook.py"},
		`  a   'b c'  "d \"e\" \\f" g\ h `:       {"a", "b c", `d "e" \f`, "g h"},
		`~/.hermes/hooks/guard.sh --mode=strict`: {"~/.hermes/hooks/guard.sh", "--mode=strict"},
	} {
		got, err := words(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q → %q, %v", in, got, err)
		}
	}
}

func TestHooksGetTheirOwnEnvironment(t *testing.T) {
	t.Setenv("HERMES_HOOK_SECRET_TOKEN", "sk-nope")
	out := filepath.Join(t.TempDir(), "env")
	r, err := New(Config{PreLLMCall: {{Command: script(t, "env > "+out)}}}, Options{Env: func() []string { return []string{"PATH=/usr/bin:/bin", "ONLY=this"} }})
	if err != nil {
		t.Fatal(err)
	}
	r.TurnStarted((&events{}).ctx(), agent.TurnStart{})
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), "ONLY=this") || strings.Contains(string(data), "sk-nope") {
		t.Fatalf("environment: %s", data)
	}
}
