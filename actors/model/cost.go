package model

import (
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
// and writes, which are billed at their own rates.
func (p Prices) Cost(model string, u schema.Usage) float64 {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0
	}
	plain := max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*pr.Input + float64(u.CompletionTokens)*pr.Output +
		float64(u.CacheReadTokens)*pr.CacheRead + float64(u.CacheWriteTokens)*pr.CacheWrite) / 1e6
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
