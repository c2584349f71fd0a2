package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/schema"
)

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite float64 `yaml:"cache_write" json:"cache_write"`
}

// Prices maps model names (or prefixes ending in "*") to prices.
type Prices map[string]Price

// DefaultPrices are list prices of well-known models; config overrides and
// extends them.
func DefaultPrices() Prices {
	return Prices{
		"gpt-4o":            {Input: 2.50, Output: 10.00, CacheRead: 1.25},
		"gpt-4o-mini":       {Input: 0.15, Output: 0.60, CacheRead: 0.075},
		"gpt-4.1":           {Input: 2.00, Output: 8.00, CacheRead: 0.50},
		"gpt-4.1-mini":      {Input: 0.40, Output: 1.60, CacheRead: 0.10},
		"gpt-5":             {Input: 1.25, Output: 10.00, CacheRead: 0.125},
		"gpt-5-mini":        {Input: 0.25, Output: 2.00, CacheRead: 0.025},
		"o3":                {Input: 2.00, Output: 8.00, CacheRead: 0.50},
		"o4-mini":           {Input: 1.10, Output: 4.40, CacheRead: 0.275},
		"claude-opus-4*":    {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
		"claude-sonnet-4*":  {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
		"claude-3-5-haiku*": {Input: 0.80, Output: 4.00, CacheRead: 0.08, CacheWrite: 1.00},
		"claude-haiku-4*":   {Input: 1.00, Output: 5.00, CacheRead: 0.10, CacheWrite: 1.25},
	}
}

// Lookup finds the price of model: an exact name first, then the longest
// matching prefix pattern. A provider prefix ("openai/gpt-4o") is ignored.
func (p Prices) Lookup(model string) (Price, bool) {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := "", Price{}
	ok := false
	for k, pr := range p {
		if pre, isPat := strings.CutSuffix(k, "*"); isPat && strings.HasPrefix(model, pre) && len(pre) > len(best) {
			best, found, ok = pre, pr, true
		}
	}
	return found, ok
}

// Cost estimates the price of one call. Prompt tokens include cache reads
// and writes, which are billed at their own rates. A model with no price
// costs 0 here: a call's record keeps that 0, and CallCost tells it from
// a free call later.
func (p Prices) Cost(model string, u schema.Usage) float64 {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0
	}
	return pr.of(u)
}

func (pr Price) of(u schema.Usage) float64 {
	plain := max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*pr.Input + float64(u.CompletionTokens)*pr.Output +
		float64(u.CacheReadTokens)*pr.CacheRead + float64(u.CacheWriteTokens)*pr.CacheWrite) / 1e6
}

// CallCost is what a recorded call (or several calls of one model, their
// usage added up) cost: the cost recorded with it when there is one; else
// its token usage at today's prices, so that a price added since prices
// the calls made before it; else nothing when it used no tokens. ok is
// false when the cost is unknown: tokens were used and the model has no
// price, which is not the same as free.
func (p Prices) CallCost(model string, u schema.Usage, recorded float64) (cost float64, ok bool) {
	if recorded > 0 {
		return recorded, true
	}
	if pr, found := p.Lookup(model); found {
		return pr.of(u), true
	}
	return 0, u.Total() == 0
}

// Bill totals model calls whose cost may be unknown: the cost of the
// priced ones, and how many (and of which models) are not.
type Bill struct {
	Calls int
	Usage schema.Usage
	// Cost is the cost of the priced calls.
	Cost float64
	// Unpriced counts the calls whose cost is unknown; UnpricedModels
	// names their models.
	Unpriced       int
	UnpricedModels []string
}

// Add counts n calls (at least one) of model with usage u and the cost
// recorded with them, priced with CallCost.
func (b *Bill) Add(p Prices, model string, u schema.Usage, recorded float64, n int) {
	n = max(n, 1)
	b.Calls += n
	b.Usage = b.Usage.Add(u)
	cost, ok := p.CallCost(model, u, recorded)
	if ok {
		b.Cost += cost
		return
	}
	b.Unpriced += n
	if !slices.Contains(b.UnpricedModels, model) {
		b.UnpricedModels = append(b.UnpricedModels, model)
	}
}

// CostText is the cost for people: "$0.0123"; "unknown" when no call is
// priced; "$0.0123 + unknown" when some are not.
func (b Bill) CostText() string {
	return CostText(b.Cost, b.Unpriced, b.Calls)
}

// CostText shows cost, the cost of the priced calls among calls of which
// unpriced have no price: "$0.0123", "unknown", or "$0.0123 + unknown".
func CostText(cost float64, unpriced, calls int) string {
	switch {
	case unpriced == 0:
		return fmt.Sprintf("$%.4f", cost)
	case unpriced >= calls && cost == 0:
		return "unknown"
	}
	return fmt.Sprintf("$%.4f + unknown", cost)
}

// Unknown says which calls have no price and how to give them one, or ""
// when every call is priced: "2 calls have no price (llama-3): add it under
// prices: in config.yaml".
func (b Bill) Unknown() string {
	if b.Unpriced == 0 {
		return ""
	}
	calls := fmt.Sprintf("%d calls have", b.Unpriced)
	if b.Unpriced == 1 {
		calls = "1 call has"
	}
	return fmt.Sprintf("%s no price (%s): add it under prices: in config.yaml", calls, strings.Join(b.UnpricedModels, ", "))
}

// AuxCall is the record of a model call made for a session outside its
// conversation (compression, memory flush, condensing search results):
// the model the response names (else the one asked for) and its cost at
// prices (the default table when nil).
func AuxCall(purpose string, prov Provider, model string, resp Response, prices Prices) schema.AuxiliaryCallCompleted {
	if prices == nil {
		prices = DefaultPrices()
	}
	if resp.Model != "" {
		model = resp.Model
	}
	return schema.AuxiliaryCallCompleted{Purpose: purpose, Model: model, Provider: prov.Name(), Usage: resp.Usage, CostUSD: prices.Cost(model, resp.Usage)}
}
