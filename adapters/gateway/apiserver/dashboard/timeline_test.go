package dashboard

import (
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

func rec(rev uint64, turn string, at time.Duration, p schema.Payload) events.Recorded {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{SessionID: "s", TurnID: turn, Time: t0.Add(at)}, p), Revision: rev}
}

func TestBuildTimeline(t *testing.T) {
	ms := time.Millisecond
	evs := []events.Recorded{
		rec(0, "", 0, schema.SessionStarted{Source: "cli", Reason: "fork", History: []schema.Message{{Role: "user", Content: "earlier"}}}),
		rec(1, "t1", 0, schema.UserMessageAdded{Content: "go"}),
		rec(2, "t1", 100*ms, schema.AssistantMessageAdded{Model: "m", Calls: 2, Usage: schema.Usage{PromptTokens: 10, CompletionTokens: 2, CacheReadTokens: 7}, CostUSD: 0.5,
			ToolCalls: []schema.ToolCall{{ID: "a"}, {ID: "b"}, {ID: "c"}}}),
		rec(3, "t1", 110*ms, schema.ToolCallStarted{CallID: "a", Name: "x"}),
		rec(4, "t1", 110*ms, schema.ToolCallStarted{CallID: "b", Name: "y"}),
		rec(5, "t1", 150*ms, schema.ToolResultAdded{CallID: "b", Name: "y"}),
		// c starts after b ended: it reuses b's lane.
		rec(6, "t1", 160*ms, schema.ToolCallStarted{CallID: "c", Name: "z"}),
		rec(7, "t1", 200*ms, schema.ToolResultAdded{CallID: "a", Name: "x", Error: "boom"}),
		rec(8, "t1", 210*ms, schema.ToolResultAdded{CallID: "c", Name: "z"}),
		rec(9, "t1", 220*ms, schema.ProviderFallback{FromProvider: "p", ToProvider: "q"}),
		rec(10, "t1", 300*ms, schema.AssistantMessageAdded{Content: "done", Model: "n"}),
		rec(11, "t1", 300*ms, schema.TurnCompleted{Iterations: 2}),
		rec(12, "t2", 400*ms, schema.UserMessageAdded{Content: "again"}),
		rec(13, "t2", 450*ms, schema.TurnInterrupted{Reason: "stop"}),
	}
	v := build(evs)
	if len(v.Turns) != 2 || v.Events != 14 || v.Last != 13 {
		t.Fatalf("turns %d events %d last %d", len(v.Turns), v.Events, v.Last)
	}
	t1 := v.Turns[0]
	if t1.Model != 2 || t1.Tools != 3 || t1.Lanes != 2 || t1.Tokens != 12 || t1.CostUSD != 0.5 || t1.Outcome != "completed" || t1.Span != 300*ms {
		t.Fatalf("turn 1: %+v", t1)
	}
	lanes := map[string]int{}
	for _, b := range t1.Bars {
		if b.Kind == "tool" {
			lanes[b.Label] = b.Lane
		}
	}
	if lanes["x"] == lanes["y"] || lanes["z"] != lanes["y"] || lanes["x"] < 1 || lanes["y"] < 1 {
		t.Fatalf("lanes %v: want x and y apart, z after y in its lane", lanes)
	}
	first := t1.Bars[0]
	if first.Kind != "model" || first.Start != 0 || first.End != 100*ms || first.Revision != 2 {
		t.Fatalf("first model call %+v", first)
	}
	second := t1.Bars[len(t1.Bars)-1]
	if second.Kind != "model" || second.Start != 210*ms || second.End != 300*ms {
		t.Fatalf("second model call %+v: starts when the last tool ended", second)
	}
	var failed bool
	for _, b := range t1.Bars {
		failed = failed || b.Label == "x" && b.Failed
	}
	kinds := map[string]bool{}
	for _, m := range t1.Marks {
		kinds[m.Kind] = true
	}
	if !failed || !kinds["retry"] || !kinds["fallback"] {
		t.Fatalf("failed %v marks %v", failed, kinds)
	}
	if v.Turns[1].Outcome != "interrupted" {
		t.Fatalf("turn 2 outcome %q", v.Turns[1].Outcome)
	}
	if len(v.Entries) == 0 || !v.Entries[0].Inherited || v.Entries[0].Content != "earlier" {
		t.Fatalf("inherited history: %+v", v.Entries[0])
	}
}

func TestBuildUnreadableEvent(t *testing.T) {
	bad := rec(0, "t", 0, schema.UserMessageAdded{Content: "x"})
	bad.Type = "NoSuchEvent"
	v := build([]events.Recorded{bad})
	if len(v.Entries) != 1 || v.Entries[0].Role != "note" {
		t.Fatalf("an unreadable event: %+v", v.Entries)
	}
}
