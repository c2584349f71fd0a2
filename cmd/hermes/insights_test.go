package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// hermes insights sums up conversations, calls, cost and tool calls from
// the projections and the sessions' events.
func TestInsightsInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	if out, _, err := inHome(t, home, "insights"); err != nil || !strings.Contains(out, "the last 30 days") || !strings.Contains(out, "no conversations") {
		t.Fatalf("an empty home: %v\n%s", err, out)
	}
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, sidOne, 2)
	m := schema.Meta{SessionID: sidTwo}
	if _, err := s.Append(context.Background(), events.SessionStream(sidTwo), events.NoStream,
		schema.MustEnvelope(m, schema.SessionStarted{Source: "telegram", Model: "gpt-4o-mini", Reason: schema.StartNew}),
		schema.MustEnvelope(m, schema.UserMessageAdded{Content: "clean up"}),
		schema.MustEnvelope(m, schema.AssistantMessageAdded{Model: "gpt-4o-mini", CostUSD: 0.002, Usage: schema.Usage{PromptTokens: 300, CompletionTokens: 10},
			ToolCalls: []schema.ToolCall{toolCall("a", "terminal"), toolCall("b", "terminal"), toolCall("c", "read_file")}}),
		schema.MustEnvelope(m, schema.AssistantMessageAdded{Model: "gpt-4o-mini", Content: "done", CostUSD: 0.001, Usage: schema.Usage{PromptTokens: 400, CompletionTokens: 5}})); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, _, err := inHome(t, home, "insights", "--days", "7")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the last 7 days", "conversations  2 (2 sessions)", "model calls    4: 900 prompt tokens", "$0.0050",
		"by model       gpt-4o-mini 4 calls $0.0050", "tool calls     3: terminal 2, read_file 1", "busiest day"} {
		if !strings.Contains(out, want) {
			t.Errorf("insights lack %q:\n%s", want, out)
		}
	}
	if _, _, err := inHome(t, home, "insights", "--days", "0"); err == nil || !strings.Contains(err.Error(), "--days 0") {
		t.Errorf("--days 0: %v", err)
	}
}

func toolCall(id, name string) schema.ToolCall {
	tc := schema.ToolCall{ID: id, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = name, "{}"
	return tc
}
