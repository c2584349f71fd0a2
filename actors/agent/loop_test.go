package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// memRecorder keeps recorded payloads in memory.
type memRecorder struct {
	mu sync.Mutex
	ps []schema.Payload
}

func (m *memRecorder) Record(_ context.Context, _ string, ps ...schema.Payload) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ps = append(m.ps, ps...)
	return nil
}

func (m *memRecorder) types() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, p := range m.ps {
		out = append(out, p.EventType())
	}
	return out
}

func (m *memRecorder) all() []schema.Payload {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]schema.Payload(nil), m.ps...)
}

// fnTool is a tool made of a function.
type fnTool struct {
	name  string
	flags tool.Flags
	run   func(ctx context.Context, args json.RawMessage) (string, error)
}

func (f fnTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: f.name, Description: "test tool " + f.name, Parameters: map[string]any{"type": "object"}}
}
func (f fnTool) Flags() tool.Flags { return f.flags }
func (f fnTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	return f.run(ctx, a)
}

func echo(name string) fnTool {
	return fnTool{name: name, run: func(_ context.Context, a json.RawMessage) (string, error) { return name + " got " + string(a), nil }}
}

type rig struct {
	srv  *llmtest.Server
	rec  *memRecorder
	loop *agent.Loop
	tr   *history.Transcript
	obs  []agent.Observation
	mu   sync.Mutex
}

func newRig(t *testing.T, tools []tool.Tool, script ...llmtest.Reply) *rig {
	t.Helper()
	srv := llmtest.New(script...)
	t.Cleanup(srv.Close)
	r := &rig{srv: srv, rec: &memRecorder{}, tr: &history.Transcript{System: "You are Hermes."}}
	r.loop = &agent.Loop{
		Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "test-key"}),
		Tools:    tool.NewTools(tools...),
		Exec:     tool.DirectExecutor{Timeout: 2 * time.Second},
		Rec:      r.rec,
		Budget:   tool.NewBudget(90),
		Cfg:      agent.Config{Model: "gpt-4o-mini", BudgetWarningAt: 0.7},
		Observe: func(o agent.Observation) {
			r.mu.Lock()
			r.obs = append(r.obs, o)
			r.mu.Unlock()
		},
	}
	return r
}

func (r *rig) turn(t *testing.T, text string) string {
	t.Helper()
	out, err := r.loop.Turn(context.Background(), r.tr, "turn-1", text)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// observed returns what the observer heard so far.
func (r *rig) observed() []agent.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Observation(nil), r.obs...)
}

// sent returns the messages of the i-th request.
func (r *rig) sent(t *testing.T, i int) []map[string]any {
	t.Helper()
	reqs := r.srv.Requests()
	if i >= len(reqs) {
		t.Fatalf("only %d requests", len(reqs))
	}
	var out []map[string]any
	for _, m := range reqs[i].Body["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func TestSimpleAnswer(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Content: "Hello there!", Prompt: 1000, Completion: 10, CacheRead: 600})
	if got := r.turn(t, "hi"); got != "Hello there!" {
		t.Fatalf("answer %q", got)
	}
	if fmt.Sprint(r.rec.types()) != "[UserMessageAdded AssistantMessageAdded TurnCompleted]" {
		t.Fatalf("events %v", r.rec.types())
	}
	msgs := r.sent(t, 0)
	if msgs[0]["role"] != "system" || msgs[0]["content"] != "You are Hermes." || msgs[1]["content"] != "hi" {
		t.Fatalf("request %v", msgs)
	}
	a := r.rec.all()[1].(schema.AssistantMessageAdded)
	if a.Usage.PromptTokens != 1000 || a.Usage.CacheReadTokens != 600 || a.Provider != "openai" || a.APIMode != model.ModeChatCompletions {
		t.Fatalf("assistant event %+v", a)
	}
	want := (400*0.15 + 10*0.60 + 600*0.075) / 1e6
	if d := a.CostUSD - want; d > 1e-12 || d < -1e-12 {
		t.Fatalf("cost %g want %g", a.CostUSD, want)
	}
	var deltas strings.Builder
	for _, o := range r.obs {
		if o.Kind == "delta" {
			deltas.WriteString(o.Text)
		}
	}
	if deltas.String() != "Hello there!" {
		t.Fatalf("streamed %q", deltas.String())
	}
}

func TestParallelToolCallsKeepOrder(t *testing.T) {
	var running, peak atomic.Int32
	slow := func(name string, d time.Duration) fnTool {
		return fnTool{name: name, run: func(context.Context, json.RawMessage) (string, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(d)
			running.Add(-1)
			return name + " done", nil
		}}
	}
	r := newRig(t, []tool.Tool{slow("alpha", 150*time.Millisecond), slow("beta", 10*time.Millisecond), slow("gamma", 80*time.Millisecond)},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "alpha", Args: `{"x":1}`}, {ID: "c2", Name: "beta", Args: `{"y":"two"}`}, {ID: "c3", Name: "gamma", Args: `{}`}}},
		llmtest.Reply{Content: "all done"})
	if got := r.turn(t, "go"); got != "all done" {
		t.Fatalf("answer %q", got)
	}
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency %d, want 3", peak.Load())
	}
	msgs := r.sent(t, 1)
	// system, user, assistant(tool_calls), tool c1, tool c2, tool c3
	if len(msgs) != 6 {
		t.Fatalf("second request has %d messages: %v", len(msgs), msgs)
	}
	tcs := msgs[2]["tool_calls"].([]any)
	if len(tcs) != 3 || tcs[1].(map[string]any)["function"].(map[string]any)["arguments"] != `{"y":"two"}` {
		t.Fatalf("tool calls reassembled wrong: %v", tcs)
	}
	for i, id := range []string{"c1", "c2", "c3"} {
		if msgs[3+i]["tool_call_id"] != id {
			t.Fatalf("result %d answers %v, want %s (original order)", i, msgs[3+i]["tool_call_id"], id)
		}
	}
	want := "[UserMessageAdded AssistantMessageAdded ToolCallStarted ToolCallStarted ToolCallStarted ToolResultAdded ToolResultAdded ToolResultAdded AssistantMessageAdded TurnCompleted]"
	if fmt.Sprint(r.rec.types()) != want {
		t.Fatalf("events %v", r.rec.types())
	}
	// The observer (the screen) hears them start in call order, and end
	// as they finish.
	var started, ended []string
	for _, o := range r.observed() {
		switch o.Kind {
		case agent.ObserveToolStart:
			started = append(started, o.ID)
		case agent.ObserveToolEnd:
			ended = append(ended, o.ID)
		}
	}
	if fmt.Sprint(started) != "[c1 c2 c3]" || fmt.Sprint(ended) != "[c2 c3 c1]" {
		t.Fatalf("observed starts %v and ends %v, want [c1 c2 c3] and [c2 c3 c1]", started, ended)
	}
}

// Parallel calls are started, as the observer sees it, in the order the
// model made them, every time (they used to be shown newest first, as
// the scheduler ran their goroutines).
func TestParallelToolStartsObservedInCallOrder(t *testing.T) {
	quick := func(name string) fnTool {
		return fnTool{name: name, run: func(context.Context, json.RawMessage) (string, error) { return name, nil }}
	}
	for i := range 20 {
		r := newRig(t, []tool.Tool{quick("a"), quick("b"), quick("c"), quick("d")},
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "a", Args: `{}`}, {ID: "c2", Name: "b", Args: `{}`}, {ID: "c3", Name: "c", Args: `{}`}, {ID: "c4", Name: "d", Args: `{}`}}},
			llmtest.Reply{Content: "done"})
		r.turn(t, "go")
		var started []string
		for _, o := range r.observed() {
			if o.Kind == agent.ObserveToolStart {
				started = append(started, o.ID)
			}
		}
		if fmt.Sprint(started) != "[c1 c2 c3 c4]" {
			t.Fatalf("run %d: starts observed as %v", i, started)
		}
	}
}

func TestInteractiveAndOverlappingWritesRunSequentially(t *testing.T) {
	var running, peak atomic.Int32
	track := func(name string, flags tool.Flags) fnTool {
		return fnTool{name: name, flags: flags, run: func(context.Context, json.RawMessage) (string, error) {
			n := running.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(40 * time.Millisecond)
			running.Add(-1)
			return "ok", nil
		}}
	}
	pathOf := func(a json.RawMessage) []string {
		var v struct{ Path string }
		json.Unmarshal(a, &v)
		return []string{v.Path}
	}
	write := track("write_file", tool.Flags{WritesPaths: pathOf})
	clarify := track("clarify", tool.Flags{Interactive: true})

	r := newRig(t, []tool.Tool{write, clarify},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: `{"path":"a/x.txt"}`}, {Name: "write_file", Args: `{"path":"a/x.txt","content":"2"}`}}},
		llmtest.Reply{Content: "done"})
	r.turn(t, "write twice")
	if peak.Load() != 1 {
		t.Fatalf("overlapping writes ran %d at once", peak.Load())
	}
	peak.Store(0)
	r2 := newRig(t, []tool.Tool{write, clarify},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: `{"path":"a/x.txt"}`}, {Name: "write_file", Args: `{"path":"b/y.txt"}`}}},
		llmtest.Reply{Content: "done"})
	r2.turn(t, "write apart")
	if peak.Load() != 2 {
		t.Fatalf("writes to different files ran %d at once, want 2", peak.Load())
	}
	peak.Store(0)
	r3 := newRig(t, []tool.Tool{write, clarify},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "clarify", Args: `{"question":"a?"}`}, {Name: "write_file", Args: `{"path":"c"}`}, {Name: "write_file", Args: `{"path":"d"}`}}},
		llmtest.Reply{Content: "done"})
	r3.turn(t, "ask")
	if peak.Load() != 1 {
		t.Fatalf("a response with an interactive tool ran %d at once", peak.Load())
	}
}

func TestToolCallValidation(t *testing.T) {
	var todoRuns atomic.Int32
	todo := fnTool{name: "todo", run: func(_ context.Context, a json.RawMessage) (string, error) {
		todoRuns.Add(1)
		return "todo " + string(a), nil
	}}
	r := newRig(t, []tool.Tool{echo("read_file"), echo("write_file"), todo, echo("delegate_task")},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "a", Name: "read_flie", Args: `{"path":"x",}`},
			{ID: "b", Name: "TodoTool_tool", Args: ``},
			{ID: "c", Name: "todo", Args: `{}`}, // identical to b after repair: runs once
			{ID: "d", Name: "write file", Args: `{"path":"y","content":"a` + "\n" + `b"`},
			{ID: "e", Name: "launch_rockets", Args: `{}`},
			{ID: "f", Name: "delegate_task", Args: `{"goal":"one"}`},
			{ID: "g", Name: "delegate_task", Args: `{"goal":"two"}`},
		}},
		llmtest.Reply{Content: "ok"})
	r.turn(t, "go")
	var started []schema.ToolCallStarted
	results := map[string]schema.ToolResultAdded{}
	for _, p := range r.rec.all() {
		switch e := p.(type) {
		case schema.ToolCallStarted:
			started = append(started, e)
		case schema.ToolResultAdded:
			results[e.CallID] = e
		}
	}
	names := []string{}
	for _, s := range started {
		names = append(names, s.Name+" "+s.Arguments)
	}
	want := []string{`read_file {"path":"x"}`, `todo {}`, "write_file {\"path\":\"y\",\"content\":\"a\\nb\"}", `launch_rockets {}`, `delegate_task {"goal":"one"}`}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("dispatched\n%q\nwant\n%q", names, want)
	}
	if todoRuns.Load() != 1 {
		t.Fatalf("duplicate todo ran %d times", todoRuns.Load())
	}
	if e := results["e"]; !strings.Contains(e.Content, `Unknown tool "launch_rockets"`) || !strings.Contains(e.Content, "read_file, todo, write_file") {
		t.Fatalf("unknown tool result: %q", e.Content)
	}
	if _, ok := results["g"]; ok {
		t.Fatal("a second delegate_task in one response was kept")
	}
	// The history sent next is valid: every kept call has its result.
	msgs := r.sent(t, 1)
	if len(msgs[2]["tool_calls"].([]any)) != 5 || len(msgs) != 3+5 {
		t.Fatalf("next request: %d messages", len(msgs))
	}
}

func TestInvalidJSONRecoveriesEndTheTurn(t *testing.T) {
	bad := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path": }`}}}
	r := newRig(t, []tool.Tool{echo("read_file")}, bad, bad, bad, bad, llmtest.Reply{Content: "never"})
	out := r.turn(t, "go")
	if !strings.Contains(out, "could not produce valid tool arguments") {
		t.Fatalf("answer %q", out)
	}
	if len(r.srv.Requests()) != 4 {
		t.Fatalf("%d calls, want 4 (3 recoveries)", len(r.srv.Requests()))
	}
	first := r.rec.all()
	var res schema.ToolResultAdded
	for _, p := range first {
		if e, ok := p.(schema.ToolResultAdded); ok {
			res = e
			break
		}
	}
	if !strings.Contains(res.Content, "not valid JSON") || !strings.Contains(res.Content, "valid JSON object") {
		t.Fatalf("error result %q", res.Content)
	}
	last := first[len(first)-1].(schema.TurnCompleted)
	if last.Outcome != agent.OutcomeBadToolJSON {
		t.Fatalf("outcome %q", last.Outcome)
	}
}

func TestLengthContinuesAndJoins(t *testing.T) {
	r := newRig(t, nil,
		llmtest.Reply{Content: "The first part, ", Finish: "length", Completion: 5},
		llmtest.Reply{Content: "the second part, ", Finish: "length", Completion: 5},
		llmtest.Reply{Content: "and the end.", Completion: 3})
	if got := r.turn(t, "write"); got != "The first part, the second part, and the end." {
		t.Fatalf("joined %q", got)
	}
	msgs := r.sent(t, 2)
	if msgs[len(msgs)-2]["content"] != "The first part, the second part, " || !strings.Contains(msgs[len(msgs)-1]["content"].(string), "Continue exactly") {
		t.Fatalf("continuation request %v", msgs[len(msgs)-2:])
	}
	a := r.rec.all()[1].(schema.AssistantMessageAdded)
	if a.Usage.CompletionTokens != 13 || a.Usage.Estimated || a.Calls != 3 {
		t.Fatalf("usage not summed over continuations, or calls not counted: %+v, %d calls", a.Usage, a.Calls)
	}
	if len(r.tr.Messages) != 2 {
		t.Fatalf("continuation prompts entered history: %+v", r.tr.Messages)
	}
}

func TestCutOffToolCallIsRetried(t *testing.T) {
	var runs atomic.Int32
	fake := fnTool{name: "write_file", run: func(context.Context, json.RawMessage) (string, error) { runs.Add(1); return "ok", nil }}
	r := newRig(t, []tool.Tool{fake},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: `{"path":"a","content":"hal`}}, Finish: "length"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: `{"path":"a","content":"whole"}`}}},
		llmtest.Reply{Content: "written"})
	r.turn(t, "write")
	if runs.Load() != 1 {
		t.Fatalf("tool ran %d times", runs.Load())
	}
	for _, p := range r.rec.all() {
		if s, ok := p.(schema.ToolCallStarted); ok && s.Arguments != `{"path":"a","content":"whole"}` {
			t.Fatalf("cut-off call was dispatched: %s", s.Arguments)
		}
	}
}

func TestBudgetWarningAndGrace(t *testing.T) {
	var script []llmtest.Reply
	for range 10 {
		script = append(script, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"x"}`}}})
	}
	script = append(script, llmtest.Reply{Content: "Summary: read x ten times."})
	r := newRig(t, []tool.Tool{echo("read_file")}, script...)
	r.loop.Budget = tool.NewBudget(10)
	out := r.turn(t, "loop")
	if out != "Summary: read x ten times." {
		t.Fatalf("answer %q", out)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 11 {
		t.Fatalf("%d calls, want 10 + grace", len(reqs))
	}
	// Calls 8.. (7 of 10 used) carry the warning on the last tool result.
	for i, req := range reqs[:10] {
		msgs := req.Body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		has := strings.Contains(fmt.Sprint(last["content"]), "[BUDGET WARNING")
		if want := i >= 6 && last["role"] == "tool"; has != want {
			t.Fatalf("call %d: warning %v, want %v (%v)", i, has, want, last)
		}
	}
	grace := reqs[10].Body
	if _, ok := grace["tools"]; ok {
		t.Fatal("grace call offered tools")
	}
	gm := grace["messages"].([]any)
	if !strings.Contains(fmt.Sprint(gm[len(gm)-1].(map[string]any)["content"]), "whole iteration budget") {
		t.Fatalf("grace call lacks the summary request")
	}
	for _, m := range r.tr.Messages {
		if strings.Contains(m.Content, "BUDGET WARNING") || strings.Contains(m.Content, "iteration budget") {
			t.Fatal("an ephemeral layer entered history")
		}
	}
	ps := r.rec.all()
	if done := ps[len(ps)-1].(schema.TurnCompleted); done.Outcome != agent.OutcomeBudget {
		t.Fatalf("outcome %q", done.Outcome)
	}
	warnings := 0
	for _, p := range ps {
		if _, ok := p.(schema.BudgetWarning); ok {
			warnings++
		}
	}
	if warnings != 1 {
		t.Fatalf("%d BudgetWarning events, want 1", warnings)
	}

	// budget_warning_at 0 switches warnings off.
	r2 := newRig(t, []tool.Tool{echo("read_file")}, script...)
	r2.loop.Budget = tool.NewBudget(10)
	r2.loop.Cfg.BudgetWarningAt = 0
	r2.turn(t, "loop")
	for _, req := range r2.srv.Requests() {
		if strings.Contains(string(req.Raw), "BUDGET WARNING") {
			t.Fatal("warning sent although switched off")
		}
	}
}

func TestReasoningIsKeptApart(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Content: "<think>The user greets me.</think>Hi!", Reasoning: "Native reasoning."})
	if got := r.turn(t, "hello"); got != "Hi!" {
		t.Fatalf("answer %q", got)
	}
	a := r.rec.all()[1].(schema.AssistantMessageAdded)
	if a.Reasoning != "Native reasoning.\n\nThe user greets me." || a.Content != "Hi!" {
		t.Fatalf("reasoning %q content %q", a.Reasoning, a.Content)
	}
	// Only thinking: nudged once, then the second answer counts.
	r2 := newRig(t, nil, llmtest.Reply{Content: "<think>hmm</think>"}, llmtest.Reply{Content: "Here is my answer."})
	if got := r2.turn(t, "q"); got != "Here is my answer." {
		t.Fatalf("after nudge %q", got)
	}
	reqs := r2.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "You only thought") {
		t.Fatal("no nudge after a reasoning-only answer")
	}
}

func TestEphemeralContextNotPersisted(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Content: "ok"})
	r.loop.Ephemeral = func() string { return "[memory: user likes Go]" }
	r.turn(t, "hi")
	msgs := r.sent(t, 0)
	if msgs[1]["content"] != "hi\n\n[memory: user likes Go]" {
		t.Fatalf("sent %v", msgs[1]["content"])
	}
	if r.tr.Messages[0].Content != "hi" {
		t.Fatalf("history holds %q", r.tr.Messages[0].Content)
	}
}

func TestInterruptDuringCall(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Content: "too late", Delay: 5 * time.Second})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(150 * time.Millisecond)
		cancel(agent.Cause("user sent /stop"))
	}()
	start := time.Now()
	_, err := r.loop.Turn(ctx, r.tr, "t", "slow please")
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("the in-flight call was not cancelled")
	}
	types := fmt.Sprint(r.rec.types())
	if types != "[UserMessageAdded TurnInterrupted]" {
		t.Fatalf("events %s", types)
	}
	if ti := r.rec.all()[1].(schema.TurnInterrupted); ti.Reason != "user sent /stop" {
		t.Fatalf("reason %q", ti.Reason)
	}
}

func TestInterruptDuringToolsClosesCalls(t *testing.T) {
	started := make(chan struct{})
	block := fnTool{name: "terminal", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}}
	r := newRig(t, []tool.Tool{block}, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "k", Name: "terminal", Args: `{"command":"sleep 100"}`}}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started // interrupt while the tool runs
		cancel()
	}()
	if _, err := r.loop.Turn(ctx, r.tr, "t", "run"); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if len(agent.DanglingCalls(r.tr.Messages)) != 0 {
		t.Fatal("an interrupted call was left without a result")
	}
	last := r.tr.Messages[len(r.tr.Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "k" || !strings.Contains(last.Content, "interrupted") {
		t.Fatalf("last message %+v", last)
	}
}

func TestPanicAndTimeoutBecomeResults(t *testing.T) {
	boom := fnTool{name: "boom", run: func(context.Context, json.RawMessage) (string, error) { panic("kaboom") }}
	hang := fnTool{name: "hang", run: func(context.Context, json.RawMessage) (string, error) { select {} }}
	r := newRig(t, []tool.Tool{boom, hang},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "p", Name: "boom", Args: `{}`}, {ID: "h", Name: "hang", Args: `{}`}}},
		llmtest.Reply{Content: "survived"})
	r.loop.Exec = tool.DirectExecutor{Timeout: 300 * time.Millisecond}
	if got := r.turn(t, "go"); got != "survived" {
		t.Fatalf("answer %q", got)
	}
	res := map[string]string{}
	for _, p := range r.rec.all() {
		if e, ok := p.(schema.ToolResultAdded); ok {
			res[e.CallID] = e.Error
		}
	}
	if !strings.Contains(res["p"], "panicked: kaboom") || !strings.Contains(res["h"], "timed out after 300ms") {
		t.Fatalf("results %v", res)
	}
}

func TestProviderErrorIsRecorded(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad model","type":"invalid_request_error"}}`})
	_, err := r.loop.Turn(context.Background(), r.tr, "t", "hi")
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("err %v", err)
	}
	if fmt.Sprint(r.rec.types()) != "[UserMessageAdded TurnInterrupted]" {
		t.Fatalf("events %v", r.rec.types())
	}
}

func TestCodeOnlyCallsRefundTheIteration(t *testing.T) {
	code := fnTool{name: "execute_code", flags: tool.Flags{RefundsIteration: true},
		run: func(context.Context, json.RawMessage) (string, error) { return "ran", nil }}
	step := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "execute_code", Args: `{"code":"print(1)"}`}}}
	r := newRig(t, []tool.Tool{code, echo("read_file")}, step, step, step, llmtest.Reply{Content: "done"})
	r.loop.Budget = tool.NewBudget(2)
	if got := r.turn(t, "go"); got != "done" {
		t.Fatalf("answer %q", got)
	}
	ps := r.rec.all()
	if c := ps[len(ps)-1].(schema.TurnCompleted); c.Outcome != agent.OutcomeAnswer {
		t.Fatalf("outcome %q: code-only iterations were not refunded", c.Outcome)
	}
	// Mixed with another tool, nothing is refunded.
	mixed := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "execute_code", Args: `{"code":"1"}`}, {Name: "read_file", Args: `{"path":"x"}`}}}
	r2 := newRig(t, []tool.Tool{code, echo("read_file")}, mixed, mixed, llmtest.Reply{Content: "summary"})
	r2.loop.Budget = tool.NewBudget(2)
	r2.turn(t, "go")
	ps = r2.rec.all()
	if c := ps[len(ps)-1].(schema.TurnCompleted); c.Outcome != agent.OutcomeBudget {
		t.Fatalf("mixed response refunded: outcome %q", c.Outcome)
	}
}

// TestResultsAreRecordedAsCallsFinish: a fast call's result is on record
// while a slow call of the same response still runs (a kill then loses
// only the slow one), and history still holds the results in call order.
func TestResultsAreRecordedAsCallsFinish(t *testing.T) {
	release := make(chan struct{})
	slow := fnTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-release:
			return "slow done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
	r := newRig(t, []tool.Tool{slow, echo("fast")},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "slow", Args: `{}`}, {ID: "c2", Name: "fast", Args: `{}`}}},
		llmtest.Reply{Content: "both done"})
	done := make(chan string, 1)
	go func() {
		out, _ := r.loop.Turn(context.Background(), r.tr, "turn-1", "go")
		done <- out
	}()
	recorded := func() []string {
		var ids []string
		for _, p := range r.rec.all() {
			if e, ok := p.(schema.ToolResultAdded); ok {
				ids = append(ids, e.CallID)
			}
		}
		return ids
	}
	deadline := time.Now().Add(5 * time.Second)
	for fmt.Sprint(recorded()) != "[c2]" {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("the fast call's result is not recorded while the slow one runs: %v", recorded())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if out := <-done; out != "both done" {
		t.Fatalf("answer %q", out)
	}
	if fmt.Sprint(recorded()) != "[c2 c1]" {
		t.Fatalf("results recorded %v, want as they finished", recorded())
	}
	var order []string
	for _, m := range r.tr.Messages {
		if m.Role == "tool" {
			order = append(order, m.ToolCallID)
		}
	}
	if fmt.Sprint(order) != "[c1 c2]" {
		t.Fatalf("history holds results %v, want call order", order)
	}
	if msgs := r.sent(t, 1); msgs[3]["tool_call_id"] != "c1" || msgs[4]["tool_call_id"] != "c2" {
		t.Fatalf("next request: %v", msgs)
	}
}

// TestDuplicateCallIDsAreMadeUnique: a response with two different calls
// both named call_1 (and one already named call_1_2) is recorded with
// unique ids, each result answering its own call.
func TestDuplicateCallIDsAreMadeUnique(t *testing.T) {
	r := newRig(t, []tool.Tool{echo("read_file")},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"a"}`}, {ID: "call_1", Name: "read_file", Args: `{"path":"b"}`},
			{ID: "call_1_2", Name: "read_file", Args: `{"path":"c"}`}, {ID: "call_1", Name: "read_file", Args: `{"path":"d"}`}}},
		llmtest.Reply{Content: "read"})
	r.turn(t, "read them")
	var ids []string
	results := map[string]string{}
	for _, p := range r.rec.all() {
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			for _, tc := range e.ToolCalls {
				ids = append(ids, tc.ID+" "+tc.Function.Arguments)
			}
		case schema.ToolResultAdded:
			results[e.CallID] = e.Content
		}
	}
	want := `[call_1 {"path":"a"} call_1_3 {"path":"b"} call_1_2 {"path":"c"} call_1_4 {"path":"d"}]`
	if fmt.Sprint(ids) != want {
		t.Fatalf("recorded calls %v\nwant %s", ids, want)
	}
	if results["call_1_3"] != `read_file got {"path":"b"}` || results["call_1_4"] != `read_file got {"path":"d"}` || len(results) != 4 {
		t.Fatalf("results %v", results)
	}
	msgs := r.sent(t, 1)
	seen := map[any]bool{}
	for _, m := range msgs[3:] {
		if seen[m["tool_call_id"]] {
			t.Fatalf("next request repeats the call id %v", m["tool_call_id"])
		}
		seen[m["tool_call_id"]] = true
	}
	if len(seen) != 4 {
		t.Fatalf("next request: %v", msgs)
	}
}
