package dashboard

import (
	"strings"
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

func TestAxisFor(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		longest, end, step time.Duration
		labels             []string
	}{
		{0, 0, 0, nil},
		{300 * ms, 300 * ms, 50 * ms, []string{"0", "50 ms", "100 ms", "150 ms", "200 ms", "250 ms", "300 ms"}},
		{301 * ms, 400 * ms, 100 * ms, []string{"0", "100 ms", "200 ms", "300 ms", "400 ms"}},
		{7 * time.Second, 8 * time.Second, 2 * time.Second, []string{"0", "2 s", "4 s", "6 s", "8 s"}},
		{1500 * ms, 1500 * ms, 250 * ms, []string{"0", "250 ms", "500 ms", "750 ms", "1000 ms", "1250 ms", "1500 ms"}},
		{4*time.Minute + 30*time.Second, 5 * time.Minute, time.Minute, []string{"0", "1 min", "2 min", "3 min", "4 min", "5 min"}},
		{200 * time.Hour, 216 * time.Hour, 24 * time.Hour, nil},
	} {
		a := axisFor(c.longest)
		if a.End != c.end || a.Step != c.step || a.End < c.longest {
			t.Errorf("axisFor(%s): end %s step %s, want %s %s", c.longest, a.End, a.Step, c.end, c.step)
		}
		if c.step > 0 && len(a.Ticks) != int(c.end/c.step)+1 {
			t.Errorf("axisFor(%s): %d ticks", c.longest, len(a.Ticks))
		}
		if c.labels != nil {
			var got []string
			for _, k := range a.Ticks {
				got = append(got, k.Label)
			}
			if strings.Join(got, "|") != strings.Join(c.labels, "|") {
				t.Errorf("axisFor(%s): labels %q, want %q", c.longest, got, c.labels)
			}
		}
	}
}

func TestGridPath(t *testing.T) {
	a := axisFor(300 * time.Millisecond)
	got := gridPath(a, 50)
	if !strings.HasPrefix(got, "M90 0V50M173.3 0V50") || !strings.HasSuffix(got, "M590 0V50") || strings.Count(got, "M") != 7 {
		t.Fatalf("grid path %q", got)
	}
}
