package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// turnHooks records what it heard and adds context to each turn.
type turnHooks struct {
	mu     sync.Mutex
	starts []agent.TurnStart
	ends   []agent.TurnEnd
}

func (h *turnHooks) TurnStarted(ctx context.Context, t agent.TurnStart) string {
	h.mu.Lock()
	h.starts = append(h.starts, t)
	h.mu.Unlock()
	// What a hook decides is recorded through the turn's Env.
	tool.EnvFrom(ctx).Record(ctx, schema.HookRan{Event: "pre_llm_call", Command: "ctx.sh", Decision: "context", Reason: "[it is Friday]"})
	return "[it is Friday]"
}

func (h *turnHooks) TurnEnded(ctx context.Context, t agent.TurnEnd) {
	h.mu.Lock()
	h.ends = append(h.ends, t)
	h.mu.Unlock()
}

func TestTurnHooks(t *testing.T) {
	mcpTool := echo("mcp_github_list_issues")
	mcpTool.flags = tool.Flags{Server: "github"}
	r := newRig(t, []tool.Tool{mcpTool},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "mcp_github_list_issues", Args: `{}`}}},
		llmtest.Reply{Content: "Two issues."},
		llmtest.Reply{Content: "Still two."})
	h := &turnHooks{}
	r.loop.Hooks = h
	r.loop.Env.SessionID = "sess-1"
	r.turn(t, "any issues?")
	// The hook's context rides on every model call of the turn, never in
	// the history.
	for i := range 2 {
		msgs := r.sent(t, i)
		if msgs[1]["content"] != "any issues?\n\n[it is Friday]" {
			t.Fatalf("request %d sent %v", i, msgs[1]["content"])
		}
	}
	if r.tr.Messages[0].Content != "any issues?" {
		t.Fatalf("history holds %q", r.tr.Messages[0].Content)
	}
	types := strings.Join(r.rec.types(), " ")
	if types != "UserMessageAdded HookRan AssistantMessageAdded ToolCallStarted ToolResultAdded AssistantMessageAdded TurnCompleted" {
		t.Fatalf("events %s", types)
	}
	started := r.rec.all()[3].(schema.ToolCallStarted)
	if started.Server != "github" || started.Name != "mcp_github_list_issues" {
		t.Fatalf("ToolCallStarted %+v", started)
	}
	r.turn(t, "and now?")
	if len(h.starts) != 2 || !h.starts[0].First || h.starts[1].First || h.starts[0].UserText != "any issues?" || h.starts[1].UserText != "and now?" ||
		h.starts[0].SessionID != "sess-1" || h.starts[0].TurnID != "turn-1" || h.starts[0].Model != "gpt-4o-mini" {
		t.Fatalf("starts %+v", h.starts)
	}
	if len(h.ends) != 2 || !h.ends[0].Completed || h.ends[0].Interrupted || h.ends[0].Err != nil {
		t.Fatalf("ends %+v", h.ends)
	}
}

func TestTurnHooksHearOfFailures(t *testing.T) {
	r := newRig(t, nil, llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad request"}}`})
	h := &turnHooks{}
	r.loop.Hooks = h
	if _, err := r.loop.Turn(context.Background(), r.tr, "t1", "hi"); err == nil {
		t.Fatal("a 400 answered")
	}
	if len(h.ends) != 1 || h.ends[0].Completed || h.ends[0].Err == nil {
		t.Fatalf("ends %+v", h.ends)
	}
}
