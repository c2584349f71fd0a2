package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// TestTurnUsage: a turn's usage is the sum of its model and auxiliary
// calls, whether it is the last turn or an earlier one, longer than one
// page of the backward read, or followed by events of no turn (a title).
func TestTurnUsage(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	var envs []schema.Envelope
	add := func(turn string, p schema.Payload) {
		e := schema.MustEnvelope(schema.Meta{SessionID: "s", TurnID: turn}, p)
		envs = append(envs, e)
	}
	add("", schema.SessionStarted{Source: "api", Model: "m", Reason: schema.StartNew})
	add("a", schema.UserMessageAdded{Content: "first"})
	add("a", schema.AssistantMessageAdded{Content: "one", Usage: schema.Usage{PromptTokens: 10, CompletionTokens: 1}})
	add("a", schema.TurnCompleted{})
	add("b", schema.UserMessageAdded{Content: "second"})
	want := schema.Usage{}
	for i := range 100 { // longer than a page
		u := schema.Usage{PromptTokens: int64(i), CompletionTokens: 2}
		add("b", schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{{ID: fmt.Sprint(i), Function: schema.FunctionCall{Name: "t"}}}, Usage: u})
		add("b", schema.ToolResultAdded{CallID: fmt.Sprint(i), Name: "t", Content: "ok"})
		want = want.Add(u)
	}
	aux := schema.Usage{PromptTokens: 7, CompletionTokens: 3}
	add("b", schema.AuxiliaryCallCompleted{Usage: aux})
	want = want.Add(aux)
	add("b", schema.TurnCompleted{})
	add("", schema.SessionTitled{Title: "t"})
	if _, err := store.Append(ctx, events.SessionStream("s"), events.NoStream, envs...); err != nil {
		t.Fatal(err)
	}
	if got, err := turnUsage(ctx, store, "b", "s"); err != nil || got != want {
		t.Fatalf("turn b: %+v %v, want %+v", got, err, want)
	}
	if got, err := turnUsage(ctx, store, "a", "s", "s"); err != nil || got != (schema.Usage{PromptTokens: 10, CompletionTokens: 1}) {
		t.Fatalf("turn a: %+v %v", got, err)
	}
	if got, err := turnUsage(ctx, store, "nope", "s", "missing"); err != nil || got != (schema.Usage{}) {
		t.Fatalf("no such turn: %+v %v", got, err)
	}
}
