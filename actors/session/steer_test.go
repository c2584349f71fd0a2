package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
)

// TestSteerReachesTheRunningTurn: guidance sent while a tool runs is
// recorded and read by the model's next call, after the tool's result,
// without interrupting the turn; guidance sent while the model writes its
// answer makes the turn go on with it; with no turn running it is refused
// and nothing is recorded.
func TestSteerReachesTheRunningTurn(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "a", Name: "echo", Args: `{"sleep":1500}`}}},
		llmtest.Reply{Content: "first answer", Delay: 1500 * time.Millisecond},
		llmtest.Reply{Content: "answer with the guidance"})
	r.create(t, "st")
	ctx := context.Background()
	if err := r.mgr.Steer("st", "too early"); !errors.Is(err, session.ErrNotRunning) {
		t.Fatalf("steer with no turn: %v", err)
	}
	done := make(chan session.TurnResult, 1)
	go func() { done <- r.mgr.Run(ctx, "st", "do the work", nil) }()
	waitFor(t, func() bool { return strings.Contains(strings.Join(r.types(t, "st"), " "), "ToolCallStarted") })
	if err := r.mgr.Steer("st", "use the staging database"); err != nil {
		t.Fatalf("steer during the tool: %v", err)
	}
	waitFor(t, func() bool { return len(r.srv.Requests()) >= 2 }) // the slow answer is being written
	if err := r.mgr.Steer("st", "and keep it short"); err != nil {
		t.Fatalf("steer during the answer: %v", err)
	}
	res := <-done
	if res.Err != nil || res.Answer != "answer with the guidance" {
		t.Fatalf("turn %+v", res)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	roles := func(i int) string {
		var out []string
		for _, m := range reqs[i].Body["messages"].([]any) {
			msg := m.(map[string]any)
			role := msg["role"].(string)
			if c, _ := msg["content"].(string); strings.HasPrefix(c, history.SteerPrefix) {
				role = "steer:" + strings.TrimPrefix(c, history.SteerPrefix)
			}
			out = append(out, role)
		}
		return strings.Join(out, ",")
	}
	if got := roles(1); got != "system,user,assistant,tool,steer:use the staging database" {
		t.Fatalf("second call read %s", got)
	}
	if got := roles(2); got != "system,user,assistant,tool,steer:use the staging database,assistant,steer:and keep it short" {
		t.Fatalf("third call read %s", got)
	}
	types := strings.Join(r.types(t, "st"), " ")
	if strings.Count(types, "TurnSteered") != 2 || strings.Count(types, "TurnInterrupted") != 0 || !strings.HasSuffix(types, "TurnCompleted") {
		t.Fatalf("events %s", types)
	}
	rs, err := r.store.ReadStream(ctx, events.SessionStream("st"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(ctx, rs, nil); err != nil {
		t.Fatalf("the steered turn does not replay: %v", err)
	}
	if err := r.mgr.Steer("st", "too late"); !errors.Is(err, session.ErrNotRunning) {
		t.Fatalf("steer after the turn: %v", err)
	}
	if strings.Count(strings.Join(r.types(t, "st"), " "), "TurnSteered") != 2 {
		t.Fatal("refused guidance was recorded")
	}
}
