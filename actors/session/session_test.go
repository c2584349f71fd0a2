package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

type echoTool struct{}

func (echoTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "echo", Description: "echo", Parameters: map[string]any{"type": "object"}}
}
func (echoTool) Flags() tool.Flags { return tool.Flags{} }
func (echoTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	var v struct{ Sleep int }
	json.Unmarshal(a, &v)
	select {
	case <-time.After(time.Duration(v.Sleep) * time.Millisecond):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "echo " + string(a), nil
}

type rig struct {
	srv   *llmtest.Server
	store *embedded.Store
	mgr   *session.Manager
	dir   string
}

func newRig(t *testing.T, script ...llmtest.Reply) *rig {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script...)
	sys := actors.NewSystem(zerolog.Nop())
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 20}
	mgr := session.NewManager(sys, deps)
	t.Cleanup(func() {
		mgr.Shutdown()
		sys.Shutdown()
		srv.Close()
		store.Close()
	})
	return &rig{srv: srv, store: store, mgr: mgr, dir: dir}
}

func (r *rig) create(t *testing.T, id string) {
	if err := session.Create(context.Background(), r.store, id, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) types(t *testing.T, id string) []string {
	rs, err := r.store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range rs {
		out = append(out, e.Type)
	}
	return out
}

func TestTurnsAreRecordedAndAgreeWithProjection(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{"x":1}`}}},
		llmtest.Reply{Content: "first done"},
		llmtest.Reply{Content: "second done"})
	r.create(t, "s1")
	ctx := context.Background()
	if res := r.mgr.Run(ctx, "s1", "do it", nil); res.Err != nil || res.Answer != "first done" {
		t.Fatalf("%+v", res)
	}
	if res := r.mgr.Run(ctx, "s1", "again", nil); res.Err != nil || res.Answer != "second done" {
		t.Fatalf("%+v", res)
	}
	// Causation chains and correlation per turn.
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	for i := 1; i < len(rs); i++ {
		if rs[i].CausationID != rs[i-1].ID {
			t.Fatalf("event %d caused by %s, want %s", i, rs[i].CausationID, rs[i-1].ID)
		}
	}
	if rs[2].TurnID == "" || rs[2].TurnID != rs[3].TurnID || rs[2].TurnID == rs[len(rs)-1].TurnID {
		t.Fatal("turn ids do not correlate one turn's events")
	}
	// The projection's history equals what the second call was sent.
	pdb, err := projections.OpenDB(filepath.Join(r.dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	run := projections.NewRunner(r.store, zerolog.Nop(), pdb.Projection(sessions.NewModel()), pdb.Projection(history.NewModel()))
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, _ := history.Messages(ctx, pdb.Reader(), "s1")
	if len(msgs) != 7 {
		t.Fatalf("projection has %d messages", len(msgs))
	}
	sent := r.srv.Requests()[2].Body["messages"].([]any)
	// The last request saw everything up to the second user message.
	if len(sent) != 6 || sent[5].(map[string]any)["content"] != "again" {
		t.Fatalf("third request %v", sent)
	}
	for i, m := range sent {
		mm := m.(map[string]any)
		if mm["role"] != msgs[i].Role {
			t.Fatalf("message %d: sent %v, projection %v", i, mm["role"], msgs[i].Role)
		}
	}
}

// TestRecoveryClosesDanglingCalls: the stream ends the way a kill -9 in
// the middle of tool execution leaves it.
func TestRecoveryClosesDanglingCalls(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "recovered"})
	r.create(t, "s2")
	ctx := context.Background()
	meta := schema.Meta{SessionID: "s2", TurnID: "dead-turn"}
	var evs []schema.Envelope
	for _, p := range []schema.Payload{
		schema.UserMessageAdded{Content: "run two tools"},
		schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{
			{ID: "a", Type: "function", Function: schema.FunctionCall{Name: "echo", Arguments: "{}"}},
			{ID: "b", Type: "function", Function: schema.FunctionCall{Name: "echo", Arguments: `{"n":2}`}}}, FinishReason: "tool_calls"},
		schema.ToolCallStarted{CallID: "a", Name: "echo", Arguments: "{}"},
		schema.ToolCallStarted{CallID: "b", Name: "echo", Arguments: `{"n":2}`},
		schema.ToolResultAdded{CallID: "a", Name: "echo", Content: "done a"},
	} {
		evs = append(evs, schema.MustEnvelope(meta, p))
	}
	if _, err := r.store.Append(ctx, events.SessionStream("s2"), events.Exact(1), evs...); err != nil {
		t.Fatal(err)
	}
	res := r.mgr.Run(ctx, "s2", "are you there?", nil)
	if res.Err != nil || res.Answer != "recovered" {
		t.Fatalf("%+v", res)
	}
	types := strings.Join(r.types(t, "s2"), " ")
	if !strings.Contains(types, "ToolResultAdded ToolResultAdded TurnInterrupted UserMessageAdded") {
		t.Fatalf("recovery did not close the dead turn: %s", types)
	}
	sent := r.srv.Requests()[0].Body["messages"].([]any)
	roles := ""
	for _, m := range sent {
		roles += m.(map[string]any)["role"].(string)[:1] + " "
	}
	if roles != "s u a t t u " {
		t.Fatalf("sent roles %q", roles)
	}
	if !strings.Contains(sent[4].(map[string]any)["content"].(string), "interrupted") {
		t.Fatalf("dangling call closed with %v", sent[4])
	}
}

func TestNewMessageInterruptsAndStopCancels(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{Content: "slow answer", Delay: 5 * time.Second},
		llmtest.Reply{Content: "quick answer"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "z", Name: "echo", Args: `{"sleep":5000}`}}})
	r.create(t, "s3")
	ctx := context.Background()
	pid, err := r.mgr.Session(ctx, "s3")
	if err != nil {
		t.Fatal(err)
	}
	_ = pid
	first := make(chan session.TurnResult, 1)
	go func() { first <- r.mgr.Run(ctx, "s3", "take your time", nil) }()
	waitFor(t, func() bool { return len(r.srv.Requests()) >= 1 }) // the slow call is in flight
	second := r.mgr.Run(ctx, "s3", "actually, quick", nil)
	if second.Err != nil || second.Answer != "quick answer" {
		t.Fatalf("second %+v", second)
	}
	if f := <-first; !errors.Is(f.Err, agent.ErrInterrupted) {
		t.Fatalf("first %+v", f)
	}
	// Stop during a tool call: cancelled through ctx, recorded.
	sctx, cancel := context.WithCancelCause(ctx)
	go func() {
		waitFor(t, func() bool { return strings.Count(strings.Join(r.types(t, "s3"), " "), "ToolCallStarted") >= 1 }) // the tool runs
		cancel(agent.Cause("user pressed Ctrl-C"))
	}()
	start := time.Now()
	third := r.mgr.Run(sctx, "s3", "run a long tool", nil)
	if !errors.Is(third.Err, agent.ErrInterrupted) || time.Since(start) > 4*time.Second {
		t.Fatalf("third %+v after %s", third, time.Since(start))
	}
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("s3"), events.Forward, 0, 0)
	var reasons []string
	for _, e := range rs {
		if e.Type == "TurnInterrupted" {
			var ti schema.TurnInterrupted
			json.Unmarshal(e.Payload, &ti)
			reasons = append(reasons, ti.Reason)
		}
	}
	if fmt.Sprint(reasons) != "[a new user message arrived user pressed Ctrl-C]" {
		t.Fatalf("interruptions %q", reasons)
	}
	types := strings.Join(r.types(t, "s3"), " ")
	if strings.Count(types, "AssistantMessageAdded") != 2 {
		t.Fatalf("a partial answer entered history: %s", types)
	}
}

func TestUnknownSession(t *testing.T) {
	r := newRig(t)
	if res := r.mgr.Run(context.Background(), "nope", "hi", nil); res.Err == nil || !strings.Contains(res.Err.Error(), "no session nope") {
		t.Fatalf("%+v", res)
	}
}

type skillManage struct{ echoTool }

func (skillManage) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "skill_manage", Parameters: map[string]any{"type": "object"}}
}

func TestSkillNudgeAfterBusyTurn(t *testing.T) {
	var calls []llmtest.ToolCall
	for i := range 5 {
		calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Args: fmt.Sprintf(`{"n":%d}`, i)})
	}
	r := newRig(t, llmtest.Reply{ToolCalls: calls}, llmtest.Reply{Content: "busy done"}, llmtest.Reply{Content: "next"}, llmtest.Reply{Content: "calm"})
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	mgr := session.NewManager(sys, session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}, skillManage{}), Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "m"}, MaxTurns: 10, SkillNudgeAfter: 5})
	defer mgr.Shutdown()
	r.create(t, "nudge")
	ctx := context.Background()
	mgr.Run(ctx, "nudge", "do five things", nil)
	mgr.Run(ctx, "nudge", "thanks", nil)
	mgr.Run(ctx, "nudge", "and now?", nil)
	reqs := r.srv.Requests()
	if !strings.Contains(string(reqs[2].Raw), "skill_manage (action=create)") {
		t.Fatal("no skill nudge after a turn of five tool calls")
	}
	if strings.Contains(string(reqs[1].Raw), "skill_manage (action=create)") || strings.Contains(string(reqs[3].Raw), "skill_manage (action=create)") {
		t.Fatal("nudge sent when not due")
	}
	msgs, _ := r.store.ReadStream(ctx, events.SessionStream("nudge"), events.Forward, 0, 0)
	for _, m := range msgs {
		if strings.Contains(string(m.Payload), "skill_manage (action=create)") {
			t.Fatal("the nudge entered history")
		}
	}
}

func TestCostCapStopsTheNextCall(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "first", Prompt: 1_000_000, Completion: 100_000}, llmtest.Reply{Content: "second"})
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	mgr := session.NewManager(sys, session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, MaxCostPerSession: 0.10})
	defer mgr.Shutdown()
	r.create(t, "capped")
	ctx := context.Background()
	if res := mgr.Run(ctx, "capped", "expensive", nil); res.Err != nil {
		t.Fatal(res.Err) // $0.15 + $0.06: over the cap only after this call
	}
	res := mgr.Run(ctx, "capped", "again", nil)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "budget.max_cost_per_session") {
		t.Fatalf("%+v", res)
	}
	if len(r.srv.Requests()) != 1 {
		t.Fatalf("%d calls: the cap did not stop the second", len(r.srv.Requests()))
	}
	// A fresh actor (restart) recovers the spending from events.
	mgr.Restart("capped")
	if res := mgr.Run(ctx, "capped", "and now?", nil); res.Err == nil {
		t.Fatal("the cap was forgotten across a restart")
	}
	// The day cap reads the day's spending.
	mgr2 := session.NewManager(sys, session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "m"}, MaxTurns: 10, MaxCostPerDay: 5, DayCost: func() float64 { return 5.01 }})
	defer mgr2.Shutdown()
	r.create(t, "day")
	if res := mgr2.Run(ctx, "day", "hi", nil); res.Err == nil || !strings.Contains(res.Err.Error(), "max_cost_per_day") {
		t.Fatalf("%+v", res)
	}
}

// waitFor polls cond for up to 20 s (instead of guessing with sleeps).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not reached in 20 s")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readCounter counts the reads of one stream through a store.
type readCounter struct {
	events.Store
	stream string
	mu     sync.Mutex
	n      int
}

func (c *readCounter) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, max int) ([]events.Recorded, error) {
	if stream == c.stream {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.Store.ReadStream(ctx, stream, dir, from, max)
}

// TestSessionStartReads: starting a session's actor reads its stream in
// its recovery only, once, with no existence check of its own before (a
// cluster turn of a new conversation paid a read for it) — with leases, as
// in a cluster, too: the lease is taken before the read, which then needs
// no read on after it (two reads before); and an unknown session is still
// refused by name, with no actor left behind.
func TestSessionStartReads(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(fmt.Sprint("leased=", leased), func(t *testing.T) { testSessionStartReads(t, leased) })
	}
}

func testSessionStartReads(t *testing.T, leased bool) {
	r := newRig(t, llmtest.Reply{Content: "hello"})
	r.create(t, "s1")
	rc := &readCounter{Store: r.store, stream: events.SessionStream("s1")}
	sys := actors.NewSystem(zerolog.Nop())
	deps := session.Deps{Store: rc, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 20}
	if leased {
		deps.Leases = session.NewFileLeases(filepath.Join(t.TempDir(), "locks"), session.ThisProcess())
	}
	mgr := session.NewManager(sys, deps)
	defer sys.Shutdown()
	defer mgr.Shutdown()
	if res := mgr.Run(context.Background(), "s1", "hi", nil); res.Err != nil || res.Answer != "hello" {
		t.Fatalf("%+v", res)
	}
	rc.mu.Lock()
	n := rc.n
	rc.mu.Unlock()
	if n != 1 {
		t.Fatalf("the session's start and turn read its stream %d times, want 1 (its recovery's)", n)
	}
	if res := mgr.Run(context.Background(), "nope", "hi", nil); res.Err == nil || !strings.Contains(res.Err.Error(), "no session nope") {
		t.Fatalf("an unknown session: %+v", res)
	}
	if a := mgr.Active(); a != 1 {
		t.Fatalf("%d session actors running after an unknown session was refused, want 1", a)
	}
}
