package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/delegate"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/schema"
)

// lastMsg returns the role and content of a request's last message and
// whether the request offered tools.
func lastMsg(r llmtest.Request) (string, string, bool) {
	msgs := r.Body["messages"].([]any)
	m := msgs[len(msgs)-1].(map[string]any)
	c, _ := m["content"].(string)
	_, tools := r.Body["tools"]
	return m["role"].(string), c, tools
}

func firstUser(r llmtest.Request) string {
	for _, m := range r.Body["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] == "user" {
			c, _ := mm["content"].(string)
			return c
		}
	}
	return ""
}

func offers(r llmtest.Request, tool string) bool {
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		if t.(map[string]any)["function"].(map[string]any)["name"] == tool {
			return true
		}
	}
	return false
}

type treeRig struct {
	srv   *llmtest.Server
	store *embedded.Store
	sys   interface{ Shutdown() }
	mgr   *session.Manager
	dir   string
}

// sideEffect is a tool that counts its real executions and may be slow.
type sideEffect struct {
	runs          *atomic.Int32
	running, peak *atomic.Int32
	wait          time.Duration
	// yolo, when set, receives the Yolo of each run's environment.
	yolo chan bool
}

func (sideEffect) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "side_effect", Parameters: map[string]any{"type": "object"}}
}
func (sideEffect) Flags() tool.Flags { return tool.Flags{} }
func (s sideEffect) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	if s.yolo != nil {
		s.yolo <- tool.EnvFrom(ctx).Yolo
	}
	s.runs.Add(1)
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-time.After(s.wait):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "effect done", nil
}

func newTreeRig(t *testing.T, route func(llmtest.Request) *llmtest.Reply, se sideEffect, tweak func(*session.Deps)) *treeRig {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New()
	srv.SetRoute(route)
	sys := actors.NewSystem(zerolog.Nop())
	all := tool.NewTools(delegate.Tool{}, se)
	noDelegate := tool.NewTools(se)
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}), Tools: all,
		Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Cfg: agent.Config{Model: "m", MaxDelegatesPerResponse: 3}, MaxTurns: 30,
		Restrict: func(_ []string, canDelegate bool) tool.Toolbox {
			if canDelegate {
				return all
			}
			return noDelegate
		}}
	if tweak != nil {
		tweak(&deps)
	}
	mgr := session.NewManager(sys, deps)
	r := &treeRig{srv: srv, store: store, sys: sys, mgr: mgr, dir: dir}
	if err := session.Create(context.Background(), store, "parent", session.Start{Source: "cli", Model: "m", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *treeRig) close() {
	r.mgr.Shutdown()
	r.sys.Shutdown()
	r.srv.Close()
	r.store.Close()
}

func (r *treeRig) types(t *testing.T, id string) string {
	rs, err := r.store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range rs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

func finals(r llmtest.Request, content string) *llmtest.Reply {
	return &llmtest.Reply{Content: content, Prompt: 100, Completion: 10}
}

func TestDepthTwoTreeWithConcurrentChildren(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var runs, running, peak atomic.Int32
	var mu sync.Mutex
	grandchildTools := map[string]bool{}
	route := func(r llmtest.Request) *llmtest.Reply {
		role, content, _ := lastMsg(r)
		goal := firstUser(r)
		switch {
		case goal == "top question" && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate_task", Args: `{"goal":"child-1: research"}`},
				{Name: "delegate_task", Args: `{"goal":"child-2: measure"}`}}}
		case goal == "top question":
			return finals(r, "parent combined: "+content[:min(len(content), 30)])
		case strings.HasPrefix(goal, "child-1") && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: `{}`}, {Name: "delegate_task", Args: `{"goal":"grandchild-1: dig"}`}}}
		case strings.HasPrefix(goal, "child-2") && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: `{"n":2}`}}}
		case strings.HasPrefix(goal, "grandchild-1") && role == "user":
			mu.Lock()
			grandchildTools["delegate_task"] = offers(r, "delegate_task")
			grandchildTools["side_effect"] = offers(r, "side_effect")
			mu.Unlock()
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: `{"n":3}`}}}
		default:
			return finals(r, "done: "+strings.SplitN(goal, ":", 2)[0])
		}
	}
	r := newTreeRig(t, route, sideEffect{runs: &runs, running: &running, peak: &peak, wait: 300 * time.Millisecond}, nil)
	res := r.mgr.Run(context.Background(), "parent", "top question", nil)
	if res.Err != nil || !strings.HasPrefix(res.Answer, "parent combined") {
		t.Fatalf("%+v", res)
	}
	if runs.Load() != 3 || peak.Load() < 2 {
		t.Fatalf("side effects %d, peak concurrency %d: children did not run at once", runs.Load(), peak.Load())
	}
	if grandchildTools["delegate_task"] || !grandchildTools["side_effect"] {
		t.Fatalf("depth limit not applied to the grandchild's tools: %v", grandchildTools)
	}
	types := r.types(t, "parent")
	if strings.Count(types, "SubagentSpawned") != 2 || strings.Count(types, "SubagentFinished") != 2 {
		t.Fatalf("parent events %s", types)
	}
	pdb, err := projections.OpenDB(filepath.Join(r.dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	run := projections.NewRunner(r.store, zerolog.Nop(), pdb.Projection(lineage.NewModel()))
	if _, err := run.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	tree, _ := lineage.Tree(context.Background(), pdb.Reader(), "parent")
	depths := map[int]int{}
	for _, n := range tree {
		depths[n.Depth]++
		if n.Root != "parent" {
			t.Fatalf("node %s has root %s", n.ID, n.Root)
		}
	}
	if depths[0] != 1 || depths[1] != 2 || depths[2] != 1 {
		t.Fatalf("tree depths %v", depths)
	}
	pdb.Close()
	r.close()
}

func TestBudgetRunsOutInTheMiddleOfTheTree(t *testing.T) {
	var runs, running, peak atomic.Int32
	var mu sync.Mutex
	var graceChild, graceParent bool
	route := func(r llmtest.Request) *llmtest.Reply {
		role, _, tools := lastMsg(r)
		goal := firstUser(r)
		if goal == "top question" {
			if !tools {
				mu.Lock()
				graceParent = true
				mu.Unlock()
				return finals(r, "parent summary after the budget ran out")
			}
			if role == "user" {
				return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"child: loop forever"}`}}}
			}
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: `{"again":true}`}}}
		}
		if !tools {
			mu.Lock()
			graceChild = true
			mu.Unlock()
			return finals(r, "child summary: looped until the budget ended")
		}
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: fmt.Sprintf(`{"i":%d}`, runs.Load())}}}
	}
	r := newTreeRig(t, route, sideEffect{runs: &runs, running: &running, peak: &peak}, func(d *session.Deps) { d.MaxTurns = 5 })
	defer r.close()
	res := r.mgr.Run(context.Background(), "parent", "top question", nil)
	if res.Err != nil || res.Answer != "parent summary after the budget ran out" || !graceChild || !graceParent {
		t.Fatalf("%+v grace child %v parent %v", res, graceChild, graceParent)
	}
	// 5 calls in all: the parent's first, then the child's until it runs out.
	if got := len(r.srv.Requests()); got != 5+2 {
		t.Fatalf("%d model calls, want 5 + 2 grace calls", got)
	}
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream("parent"), events.Forward, 0, 0)
	for _, e := range rs {
		if e.Type == "SubagentFinished" {
			var f schema.SubagentFinished
			json.Unmarshal(e.Payload, &f)
			if f.Status != "budget_exhausted" || f.Usage.PromptTokens == 0 {
				t.Fatalf("child finished %+v", f)
			}
		}
	}
}

func TestChildCrashesTwiceThenSucceeds(t *testing.T) {
	var runs, running, peak atomic.Int32
	var childCalls atomic.Int32
	route := func(r llmtest.Request) *llmtest.Reply {
		role, content, _ := lastMsg(r)
		if firstUser(r) == "top question" {
			if role == "user" {
				return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"child: do one side effect"}`}}}
			}
			return finals(r, "parent saw: "+content)
		}
		switch childCalls.Add(1) {
		case 1:
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "once", Name: "side_effect", Args: `{}`}}}
		case 2, 3:
			return &llmtest.Reply{Status: 500, ErrorBody: `{"error":{"message":"the model crashed"}}`}
		}
		return finals(r, "child finished after two crashes")
	}
	r := newTreeRig(t, route, sideEffect{runs: &runs, running: &running, peak: &peak}, func(d *session.Deps) { d.ChildRestarts = 3 })
	defer r.close()
	res := r.mgr.Run(context.Background(), "parent", "top question", nil)
	if res.Err != nil || !strings.Contains(res.Answer, "child finished after two crashes") {
		t.Fatalf("%+v", res)
	}
	if runs.Load() != 1 {
		t.Fatalf("the recorded side effect ran %d times", runs.Load())
	}
	var child string
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream("parent"), events.Forward, 0, 0)
	for _, e := range rs {
		if e.Type == "SubagentSpawned" {
			var s schema.SubagentSpawned
			json.Unmarshal(e.Payload, &s)
			child = s.ChildSessionID
		}
	}
	types := r.types(t, child)
	if strings.Count(types, "UserMessageAdded") != 1 || strings.Count(types, "ToolResultAdded") != 1 || strings.Contains(types, "TurnInterrupted") ||
		!strings.HasSuffix(types, "AssistantMessageAdded TurnCompleted") {
		t.Fatalf("child events after restarts: %s", types)
	}
}

func TestChildFailureEscalatesAfterTheRestartLimit(t *testing.T) {
	var runs, running, peak atomic.Int32
	var childCalls atomic.Int32
	route := func(r llmtest.Request) *llmtest.Reply {
		role, content, _ := lastMsg(r)
		if firstUser(r) == "top question" {
			if role == "user" {
				return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "d", Name: "delegate_task", Args: `{"goal":"child: doomed"}`}}}
			}
			return finals(r, "parent handled: "+content)
		}
		childCalls.Add(1)
		return &llmtest.Reply{Status: 500, ErrorBody: `{"error":{"message":"always down"}}`}
	}
	r := newTreeRig(t, route, sideEffect{runs: &runs, running: &running, peak: &peak}, func(d *session.Deps) { d.ChildRestarts = 2 })
	defer r.close()
	res := r.mgr.Run(context.Background(), "parent", "top question", nil)
	if res.Err != nil || !strings.Contains(res.Answer, "failed 3 times and was given up") {
		t.Fatalf("%+v", res)
	}
	if childCalls.Load() != 3 {
		t.Fatalf("child tried %d times, want 1 + 2 restarts", childCalls.Load())
	}
}

func TestStoppingTheParentStopsTheTree(t *testing.T) {
	var runs, running, peak atomic.Int32
	route := func(r llmtest.Request) *llmtest.Reply {
		role, _, _ := lastMsg(r)
		if firstUser(r) == "top question" && role == "user" {
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"child: slow work"}`}}}
		}
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "side_effect", Args: `{}`}}}
	}
	r := newTreeRig(t, route, sideEffect{runs: &runs, running: &running, peak: &peak, wait: time.Minute}, nil)
	defer r.close()
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		for running.Load() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel(agent.Cause("user sent /stop"))
	}()
	res := r.mgr.Run(ctx, "parent", "top question", nil)
	if !errors.Is(res.Err, agent.ErrInterrupted) {
		t.Fatalf("%+v", res)
	}
	types := r.types(t, "parent")
	if !strings.Contains(types, "SubagentFinished") || !strings.HasSuffix(types, "TurnInterrupted") {
		t.Fatalf("parent events %s", types)
	}
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream("parent"), events.Forward, 0, 0)
	for _, e := range rs {
		if e.Type == "SubagentFinished" {
			var f schema.SubagentFinished
			json.Unmarshal(e.Payload, &f)
			if f.Status != "interrupted" {
				t.Fatalf("child status %s", f.Status)
			}
			if !strings.HasSuffix(r.types(t, f.ChildSessionID), "TurnInterrupted") {
				t.Fatalf("child events %s", r.types(t, f.ChildSessionID))
			}
		}
	}
}
