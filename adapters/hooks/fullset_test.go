package hooks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/delegate"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// echoTool answers its arguments back and counts its runs.
type echoTool struct{ runs *atomic.Int32 }

func (echoTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "echo", Description: "echo", Parameters: map[string]any{"type": "object"}}
}
func (echoTool) Flags() tool.Flags { return tool.Flags{} }
func (e echoTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	e.runs.Add(1)
	return "echo says " + string(args), nil
}

// fired is what registered hooks heard: each event with its payload.
type fired struct {
	mu sync.Mutex
	l  []map[string]any
}

func (f *fired) hook(answer string) hooks.Func {
	return func(_ context.Context, in []byte) ([]byte, error) {
		var p map[string]any
		json.Unmarshal(in, &p)
		f.mu.Lock()
		f.l = append(f.l, p)
		f.mu.Unlock()
		return []byte(answer), nil
	}
}

func (f *fired) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.l {
		out = append(out, p["hook_event_name"].(string))
	}
	return out
}

func (f *fired) first(event string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.l {
		if p["hook_event_name"] == event {
			return p
		}
	}
	return nil
}

// rig is a real session (embedded store, the scripted model over the
// OpenAI wire format, the tool pool) with r as its hooks.
type rig struct {
	srv   *llmtest.Server
	store events.Store
	mgr   *session.Manager
	runs  atomic.Int32
}

func newRig(t *testing.T, r *hooks.Runner, script ...llmtest.Reply) *rig {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{srv: llmtest.New(script...), store: store}
	sys := actors.NewSystem(zerolog.Nop())
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: g.srv.URL + "/v1"}),
		Tools: tool.NewTools(r.Tools(echoTool{&g.runs}, delegate.Tool{})...), Exec: toolrun.NewPool(sys, 8, 5*time.Second),
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 20, MaxDepth: 2, Hooks: r}
	g.mgr = session.NewManager(sys, deps)
	t.Cleanup(func() {
		g.mgr.Shutdown()
		sys.Shutdown()
		g.srv.Close()
		store.Close()
	})
	if err := session.Create(context.Background(), store, "s1", session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *rig) recorded(t *testing.T) []events.Recorded {
	rs, err := g.store.ReadStream(context.Background(), events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func hookRuns(t *testing.T, rs []events.Recorded) []schema.HookRan {
	var out []schema.HookRan
	for _, r := range rs {
		if r.Type == schema.TypeHookRan {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.(schema.HookRan))
		}
	}
	return out
}

func register(t *testing.T, r *hooks.Runner, regs ...hooks.Registration) {
	t.Helper()
	for _, reg := range regs {
		if err := r.Register(reg); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryEventFiresAtItsPoint: a turn with one tool call fires the turn,
// request, tool and answer events in the order of the Python agent, each
// with its payload.
func TestEveryEventFiresAtItsPoint(t *testing.T) {
	r, _ := hooks.New(nil, hooks.Options{Platform: "cli"})
	f := &fired{}
	for _, e := range []string{hooks.OnSessionStart, hooks.PreLLMCall, hooks.PreAPIRequest, hooks.PostAPIRequest, hooks.APIRequestError,
		hooks.PreToolCall, hooks.PostToolCall, hooks.TransformToolResult, hooks.TransformTerminalOutput, hooks.TransformLLMOutput,
		hooks.PostLLMCall, hooks.OnSessionEnd} {
		register(t, r, hooks.Registration{Event: e, Name: "plugin:probe", Run: f.hook("")})
	}
	g := newRig(t, r, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{"x":1}`}}}, llmtest.Reply{Content: "done"})
	if res := g.mgr.Run(context.Background(), "s1", "go", nil); res.Err != nil || res.Answer != "done" {
		t.Fatalf("%+v", res)
	}
	want := "on_session_start pre_llm_call pre_api_request post_api_request pre_tool_call post_tool_call transform_tool_result " +
		"pre_api_request post_api_request transform_llm_output post_llm_call on_session_end"
	if got := strings.Join(f.events(), " "); got != want {
		t.Fatalf("fired:\n got %s\nwant %s", got, want)
	}
	check := func(event string, ok func(p, x map[string]any) bool) {
		t.Helper()
		p := f.first(event)
		if p == nil || !ok(p, p["extra"].(map[string]any)) {
			t.Errorf("%s payload: %v", event, p)
		}
	}
	check("pre_tool_call", func(p, _ map[string]any) bool {
		in, _ := p["tool_input"].(map[string]any)
		return p["tool_name"] == "echo" && in["x"] == 1.0 && p["session_id"] == "s1"
	})
	check("post_tool_call", func(_, x map[string]any) bool { return x["result"] == `echo says {"x":1}` && x["status"] == "ok" })
	check("transform_tool_result", func(_, x map[string]any) bool { return x["result"] == `echo says {"x":1}` })
	check("pre_api_request", func(_, x map[string]any) bool {
		return x["model"] == "gpt-4o-mini" && x["provider"] == "openai" && x["message_count"] == 1.0 && x["tool_count"] == 2.0
	})
	check("post_api_request", func(_, x map[string]any) bool {
		return x["finish_reason"] == "tool_calls" && x["assistant_tool_call_count"] == 1.0
	})
	check("pre_llm_call", func(_, x map[string]any) bool { return x["user_message"] == "go" && x["is_first_turn"] == true })
	check("transform_llm_output", func(_, x map[string]any) bool { return x["response_text"] == "done" })
	check("post_llm_call", func(_, x map[string]any) bool { return x["assistant_response"] == "done" })
	check("on_session_end", func(_, x map[string]any) bool { return x["completed"] == true && x["interrupted"] == false })
	check("on_session_start", func(_, x map[string]any) bool { return x["model"] == "gpt-4o-mini" && x["platform"] == "cli" })
	if n := len(hookRuns(t, g.recorded(t))); n != 12 {
		t.Errorf("%d HookRan events, want 12", n)
	}

	// A request that fails fires api_request_error, not post_api_request.
	f.l = nil
	g2 := newRig(t, r, llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad request"}}`})
	g2.mgr.Run(context.Background(), "s1", "go", nil)
	if got := strings.Join(f.events(), " "); !strings.Contains(got, "pre_api_request api_request_error") || strings.Contains(got, "post_api_request") {
		t.Fatalf("a failed request fired %s", got)
	}
	if x := f.first("api_request_error")["extra"].(map[string]any); !strings.Contains(x["error"].(string), "bad request") {
		t.Errorf("api_request_error: %v", x)
	}
}

// TestSubagentHooks: delegating fires subagent_start and subagent_stop
// with the child's session, status and summary.
func TestSubagentHooks(t *testing.T) {
	r, _ := hooks.New(nil, hooks.Options{})
	f := &fired{}
	register(t, r, hooks.Registration{Event: hooks.SubagentStart, Name: "p", Run: f.hook("")}, hooks.Registration{Event: hooks.SubagentStop, Name: "p", Run: f.hook("")})
	g := newRig(t, r, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "d1", Name: "delegate_task", Args: `{"goal":"count to 3"}`}}},
		llmtest.Reply{Content: "1 2 3"}, llmtest.Reply{Content: "the child counted"})
	if res := g.mgr.Run(context.Background(), "s1", "delegate", nil); res.Err != nil || res.Answer != "the child counted" {
		t.Fatalf("%+v", res)
	}
	if got := strings.Join(f.events(), " "); got != "subagent_start subagent_stop" {
		t.Fatalf("fired %s", got)
	}
	start, stop := f.first("subagent_start")["extra"].(map[string]any), f.first("subagent_stop")["extra"].(map[string]any)
	if start["child_goal"] != "count to 3" || start["parent_session_id"] != "s1" || stop["child_session_id"] != start["child_session_id"] ||
		stop["child_status"] != "completed" || stop["child_summary"] != "1 2 3" {
		t.Fatalf("start %v\nstop %v", start, stop)
	}
}

// TestBlockingPreToolCallStopsTheTool: a pre_tool_call hook that blocks
// keeps the tool from running; the model reads why.
func TestBlockingPreToolCallStopsTheTool(t *testing.T) {
	r, _ := hooks.New(hooks.Config{hooks.PreToolCall: {{Command: writeScript(t, `echo '{"action": "block", "message": "echo is off today"}'`), Matcher: "ech.*"}}}, hooks.Options{})
	g := newRig(t, r, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{}`}}}, llmtest.Reply{Content: "ok"})
	if res := g.mgr.Run(context.Background(), "s1", "go", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if g.runs.Load() != 0 {
		t.Fatal("the blocked tool ran")
	}
	if second := string(g.srv.Requests()[1].Raw); !strings.Contains(second, "blocked by a pre_tool_call hook: echo is off today") {
		t.Fatalf("the model was not told: %s", second)
	}
}

// TestTransformChangesWhatTheModelSeesAndReplays: transform_tool_result
// replaces the result the model reads, transform_llm_output the answer;
// both are recorded (the replacement and what it replaced), and a
// replay of the record reproduces the turn, the replacements included.
func TestTransformChangesWhatTheModelSeesAndReplays(t *testing.T) {
	r, _ := hooks.New(hooks.Config{hooks.TransformToolResult: {{Command: writeScript(t, `echo '{"result": "[result withheld by policy]"}'`)}}}, hooks.Options{})
	register(t, r, hooks.Registration{Event: hooks.TransformLLMOutput, Name: "plugin:shout", Run: func(_ context.Context, in []byte) ([]byte, error) {
		var p struct {
			Extra struct {
				Text string `json:"response_text"`
			} `json:"extra"`
		}
		json.Unmarshal(in, &p)
		return json.Marshal(map[string]string{"response_text": strings.ToUpper(p.Extra.Text)})
	}})
	g := newRig(t, r, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{"secret":"s3"}`}}}, llmtest.Reply{Content: "all done"})
	res := g.mgr.Run(context.Background(), "s1", "go", nil)
	if res.Err != nil || res.Answer != "ALL DONE" {
		t.Fatalf("%+v", res)
	}
	second := string(g.srv.Requests()[1].Raw)
	if !strings.Contains(second, "[result withheld by policy]") || strings.Contains(second, "echo says") {
		t.Fatalf("the model read: %s", second)
	}
	rs := g.recorded(t)
	var transforms []string
	for _, h := range hookRuns(t, rs) {
		if h.Decision == "transform" {
			transforms = append(transforms, h.Event+": "+h.Original+" → "+h.Reason)
		}
	}
	if strings.Join(transforms, "\n") != "transform_tool_result: echo says {\"secret\":\"s3\"} → [result withheld by policy]\ntransform_llm_output: all done → ALL DONE" {
		t.Fatalf("recorded transforms:\n%s", strings.Join(transforms, "\n"))
	}
	// The replay, with no hooks, makes the same events; the history it
	// folds (what the model reads next turn) has the replacements.
	if _, err := replay.Run(context.Background(), rs, nil); err != nil {
		t.Fatal(err)
	}
	tr := &history.Transcript{}
	for _, e := range rs {
		p, _ := schema.Decode(e.Envelope)
		tr.Apply(p)
	}
	var seen []string
	for _, m := range tr.Messages {
		seen = append(seen, m.Role+":"+m.Content)
	}
	if got := strings.Join(seen, "|"); got != "user:go|assistant:|tool:[result withheld by policy]|assistant:ALL DONE" {
		t.Fatalf("history: %s", got)
	}
}

// TestHangingHookTimesOut: a registered hook that never returns and a
// shell hook that sleeps are abandoned at their timeouts; the turn goes
// on and records why.
func TestHangingHookTimesOut(t *testing.T) {
	r, _ := hooks.New(hooks.Config{hooks.PostToolCall: {{Command: writeScript(t, "sleep 30"), Timeout: 1}}}, hooks.Options{})
	block := make(chan struct{})
	defer close(block)
	register(t, r, hooks.Registration{Event: hooks.PreToolCall, Name: "plugin:stuck", Timeout: 200 * time.Millisecond,
		Run: func(context.Context, []byte) ([]byte, error) { <-block; return nil, nil }})
	g := newRig(t, r, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{}`}}}, llmtest.Reply{Content: "ok"})
	start := time.Now()
	if res := g.mgr.Run(context.Background(), "s1", "go", nil); res.Err != nil || res.Answer != "ok" {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the turn took %s", d)
	}
	if g.runs.Load() != 1 {
		t.Fatal("the tool did not run after its hook timed out")
	}
	var got []string
	for _, h := range hookRuns(t, g.recorded(t)) {
		got = append(got, h.Event+":"+h.Decision+":"+h.Reason)
	}
	if strings.Join(got, " ") != "pre_tool_call:failed:timed out after 200ms post_tool_call:failed:timed out after 1s" {
		t.Fatalf("recorded %v", got)
	}
}

// TestConsentAskedOnce: a new hook command is asked about once on the
// terminal; yes is remembered in the allowlist file (a later process runs
// it without asking); no is remembered for the process; without a
// terminal a new command is refused unless Accept.
func TestConsentAskedOnce(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, hooks.AllowlistFile)
	cmd := writeScript(t, "true")
	cfg := hooks.Config{hooks.PreLLMCall: {{Command: cmd}}, hooks.OnSessionEnd: {{Command: cmd}}}
	var out strings.Builder
	c := &hooks.Consent{Path: path, In: strings.NewReader("y\nn\n"), Out: &out}
	r1, _ := hooks.New(cfg, hooks.Options{Consent: c})
	r2, _ := hooks.New(cfg, hooks.Options{Consent: c}) // a second runner of the same chat
	if strings.Count(out.String(), "Allow this hook to run?") != 2 {
		t.Fatalf("asked:\n%s", out.String())
	}
	if !r1.Has(hooks.PreLLMCall) || r1.Has(hooks.OnSessionEnd) || !r2.Has(hooks.PreLLMCall) || r2.Has(hooks.OnSessionEnd) {
		t.Fatal("the answers were not kept")
	}
	// A later process: the yes is remembered, the no asked again, and
	// without a terminal refused.
	later := &hooks.Consent{Path: path}
	r3, _ := hooks.New(cfg, hooks.Options{Consent: later})
	if !r3.Has(hooks.PreLLMCall) || r3.Has(hooks.OnSessionEnd) {
		t.Fatal("a later process without a terminal")
	}
	if _, skipped := r3.List(); len(skipped) != 1 || skipped[0].Event != hooks.OnSessionEnd {
		t.Fatalf("skipped %v", skipped)
	}
	r4, _ := hooks.New(cfg, hooks.Options{Consent: &hooks.Consent{Path: path, Accept: true}})
	if !r4.Has(hooks.OnSessionEnd) {
		t.Fatal("Accept did not allow")
	}
	if a, ok := later.Approved(hooks.OnSessionEnd, cmd); !ok || a.ScriptMTime == nil {
		t.Fatalf("Accept was not remembered: %+v", a)
	}
	if n, err := later.Revoke(cmd); n != 2 || err != nil {
		t.Fatalf("revoked %d, %v", n, err)
	}
	if len(later.Approvals()) != 0 {
		t.Fatal("revoke left approvals")
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"approvals": []`) {
		t.Fatalf("allowlist file: %s", data)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type answering struct{ asked []tool.Question }

func (a *answering) Ask(_ context.Context, q tool.Question) (string, error) {
	a.asked = append(a.asked, q)
	if q.Kind == tool.QuestionApproval {
		return "session", nil
	}
	return "blue", nil
}

// TestApprovalHooksObserve: an approval question fires
// pre_approval_request before the person is asked and
// post_approval_response with their choice; a clarify question fires
// neither, and the hooks cannot answer for the person.
func TestApprovalHooksObserve(t *testing.T) {
	r, _ := hooks.New(nil, hooks.Options{Platform: "telegram"})
	f := &fired{}
	register(t, r, hooks.Registration{Event: hooks.PreApprovalRequest, Name: "p", Run: f.hook(`{"action": "block", "message": "no"}`)},
		hooks.Registration{Event: hooks.PostApprovalResponse, Name: "p", Run: f.hook("")})
	person := &answering{}
	a := r.Asker(person)
	var recorded []schema.HookRan
	ctx := tool.WithEnv(context.Background(), &tool.Env{SessionID: "s9", TurnID: "t1", Record: func(_ context.Context, ps ...schema.Payload) error {
		for _, p := range ps {
			recorded = append(recorded, p.(schema.HookRan))
		}
		return nil
	}})
	if got, err := a.Ask(ctx, tool.Question{Kind: tool.QuestionClarify, Text: "which colour?"}); got != "blue" || err != nil {
		t.Fatal(got, err)
	}
	got, err := a.Ask(ctx, tool.Question{Kind: tool.QuestionApproval, Text: "rm -rf build/: recursive delete. Allow?", Choices: []string{"once", "session", "always", "deny"}})
	if got != "session" || err != nil || len(person.asked) != 2 {
		t.Fatalf("%q %v %d", got, err, len(person.asked))
	}
	if strings.Join(f.events(), " ") != "pre_approval_request post_approval_response" {
		t.Fatalf("fired %v", f.events())
	}
	pre, post := f.first("pre_approval_request"), f.first("post_approval_response")
	if x := pre["extra"].(map[string]any); x["description"] != "rm -rf build/: recursive delete. Allow?" || x["surface"] != "telegram" || pre["session_id"] != "s9" {
		t.Fatalf("pre: %v", pre)
	}
	if x := post["extra"].(map[string]any); x["choice"] != "session" {
		t.Fatalf("post: %v", post)
	}
	if len(recorded) != 2 {
		t.Fatalf("recorded %v", recorded)
	}
	if r2, _ := hooks.New(nil, hooks.Options{}); r2.Asker(person) != tool.Asker(person) {
		t.Fatal("an asker was wrapped with no approval hooks")
	}
}

// mirroring is an asker whose front end shows commands live.
type mirroring struct {
	answering
	asked []string
}

func (m *mirroring) MirrorTerminal(_ context.Context, command, _ string) (tool.MirroredTerminal, error) {
	m.asked = append(m.asked, command)
	return nil, nil
}

// TestApprovalHooksKeepTheTerminalMirror: the asker the approval hooks
// wrap still shows commands in the person's terminal (an editor's), and
// offers nothing when the person's front end has no terminal.
func TestApprovalHooksKeepTheTerminalMirror(t *testing.T) {
	r, _ := hooks.New(nil, hooks.Options{})
	register(t, r, hooks.Registration{Event: hooks.PreApprovalRequest, Name: "p", Run: (&fired{}).hook("")})
	m := &mirroring{}
	a, ok := r.Asker(m).(tool.TerminalMirror)
	if !ok {
		t.Fatal("the wrapped asker hides the terminal mirror")
	}
	if _, err := a.MirrorTerminal(context.Background(), "make test", "/w"); err != nil || len(m.asked) != 1 || m.asked[0] != "make test" {
		t.Fatalf("mirror asked %v (%v)", m.asked, err)
	}
	plain, _ := r.Asker(&answering{}).(tool.TerminalMirror)
	if v, err := plain.MirrorTerminal(context.Background(), "ls", "/w"); v != nil || err != nil {
		t.Fatalf("a front end without a terminal got a view %v (%v)", v, err)
	}
}
