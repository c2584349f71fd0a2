package session_test

import (
	"context"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

type memoryTool struct{ echoTool }

func (memoryTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "memory", Parameters: map[string]any{"type": "object"}}
}

// A turn that reaches the threshold of tool-calling steps is handed to
// the review (ReviewSpawned first, in the parent's stream), with the
// conversation; steps count from that review, a skill_manage call resets
// them, and a restarted actor counts from the review its events record.
// User turns count towards a memory review the same way.
func TestReviewAfterBusyTurns(t *testing.T) {
	step := func(name string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: name, Args: `{}`}}}
	}
	r := newRig(t,
		step("echo"), step("echo"), llmtest.Reply{Content: "busy"}, // 2 steps: skills due
		step("echo"), llmtest.Reply{Content: "one more"}, // 1 step since the review
		llmtest.Reply{Content: "after restart"},                             // still 1: the restarted actor counts from the review
		step("skill_manage"), step("echo"), llmtest.Reply{Content: "saved"}, // the skill_manage call resets: 1
		step("echo"), llmtest.Reply{Content: "due again"}, // 2 since it, and the 5th user turn: both due
	)
	var mu sync.Mutex
	var got []session.ReviewRequest
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	deps := session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}, skillManage{}, memoryTool{}), Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "m"}, MaxTurns: 10,
		ReviewSkillsAfter: 2, ReviewMemoryAfter: 5,
		Review: func(req session.ReviewRequest) { mu.Lock(); got = append(got, req); mu.Unlock() }}
	mgr := session.NewManager(sys, deps)
	defer mgr.Shutdown()
	r.create(t, "busy")
	ctx := context.Background()
	run := func(text string) {
		t.Helper()
		if res := mgr.Run(ctx, "busy", text, nil); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	run("deploy")
	if count() != 1 || !got[0].Skills || got[0].Memory || got[0].SessionID != "busy" || got[0].TurnID == "" || len(got[0].Messages) != 6 || got[0].System != "You are Hermes." {
		t.Fatalf("after the busy turn: %+v", got)
	}
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("busy"), events.Forward, 0, 0)
	last := rs[len(rs)-1]
	if last.Type != schema.TypeReviewSpawned || last.TurnID != got[0].TurnID {
		t.Fatalf("the parent's stream ends with %s", last.Type)
	}
	p, _ := schema.Decode(last.Envelope)
	if p.(schema.ReviewSpawned).ReviewID != got[0].ID {
		t.Fatal("ReviewSpawned names another review")
	}
	run("a little more")
	mgr.Restart("busy")
	run("still there?")
	if count() != 1 {
		t.Fatalf("a restarted session reviewed below the threshold: %d", count())
	}
	run("save it")
	if count() != 1 {
		t.Fatalf("reviewed although skill_manage was called: %d", count())
	}
	run("one more step")
	if count() != 2 || !got[1].Skills || !got[1].Memory {
		t.Fatalf("the second review: %+v", got[1:])
	}
}
