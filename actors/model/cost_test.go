package model

import (
	"testing"

	"github.com/hermes-go/hermes/schema"
)

// A call's cost is what it recorded, else its usage at today's prices,
// else unknown when it used tokens; a bill counts the unknown ones apart.
func TestCallCostAndBill(t *testing.T) {
	prices := Prices{"priced": {Input: 1, Output: 2}, "free": {}}
	u := schema.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}
	for _, c := range []struct {
		name, model string
		usage       schema.Usage
		recorded    float64
		cost        float64
		ok          bool
	}{
		{"recorded", "nosuch", u, 0.25, 0.25, true},
		{"priced since", "priced", u, 0, 3, true},
		{"free model", "free", u, 0, 0, true},
		{"no price", "nosuch", u, 0, 0, false},
		{"no tokens", "nosuch", schema.Usage{}, 0, 0, true},
	} {
		if cost, ok := prices.CallCost(c.model, c.usage, c.recorded); cost != c.cost || ok != c.ok {
			t.Errorf("%s: %g %v, want %g %v", c.name, cost, ok, c.cost, c.ok)
		}
	}
	var b Bill
	if b.CostText() != "$0.0000" || b.Unknown() != "" {
		t.Fatalf("empty bill: %s %q", b.CostText(), b.Unknown())
	}
	b.Add(prices, "nosuch", u, 0, 2)
	if b.CostText() != "unknown" || b.Unknown() != "2 calls have no price (nosuch): add it under prices: in config.yaml" {
		t.Fatalf("unpriced bill: %s %q", b.CostText(), b.Unknown())
	}
	b.Add(prices, "priced", u, 0, 1)
	b.Add(prices, "nosuch", u, 0, 1)
	if b.Calls != 4 || b.Unpriced != 3 || len(b.UnpricedModels) != 1 || b.CostText() != "$3.0000 + unknown" {
		t.Fatalf("mixed bill: %+v %s", b, b.CostText())
	}
}
