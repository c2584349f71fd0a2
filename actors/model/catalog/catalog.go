// Package catalog is the table of model providers Hermes knows by name:
// for each, the API mode it speaks, its default base URL, the environment
// variables its key and base URL are read from, and its well-known models
// with their context windows and list prices where known. --provider,
// model.provider and `hermes model` read it; adapters/llm builds the
// provider it describes.
//
// The facts come from the Python Hermes Agent 0.19.0 (its provider
// registry, curated model lists, context-length table and official-docs
// price snapshot) and from the providers' own documentation; the table is
// our own. A price or window that is not known stays unknown (nil, 0),
// never zero dollars.
package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/internal/typo"
)

// Provider is one provider Hermes knows by name.
type Provider struct {
	// ID is the canonical name, as --provider and model.provider take it.
	ID string
	// Label is the name shown to people.
	Label string
	// Mode is the API mode spoken (one of the model.Mode constants).
	Mode string
	// BaseURL is the default endpoint ("" where the user names it, custom
	// and Azure, or the SDK knows it, Bedrock's per region).
	BaseURL string
	// BaseURLEnv, when set in the environment, replaces BaseURL.
	BaseURLEnv string
	// KeyEnv are the variables the key is read from, the first one set
	// winning. Empty: no key (local servers, AWS credentials for Bedrock).
	KeyEnv []string
	// KeyHeader is the request header the key travels in when it is not
	// the mode's usual one (Azure's api-key).
	KeyHeader string
	// Local providers run on the user's machine and need no key.
	Local bool
	// NeedsBaseURL: there is no default endpoint; base_url must be set.
	NeedsBaseURL bool
	// Aliases are other names accepted for ID.
	Aliases []string
	// Models are well-known models, the provider's first pick first.
	Models []Model
}

// Model is one well-known model of a provider.
type Model struct {
	ID string
	// Window is the context window in tokens (0: unknown).
	Window int
	// Price is the list price (nil: unknown).
	Price *model.Price
}

// DefaultModel is the provider's first pick ("" when it lists none).
func (p Provider) DefaultModel() string {
	if len(p.Models) == 0 {
		return ""
	}
	return p.Models[0].ID
}

// Model finds one of p's models by ID (case-insensitive).
func (p Provider) Model(id string) (Model, bool) {
	for _, m := range p.Models {
		if strings.EqualFold(m.ID, id) {
			return m, true
		}
	}
	return Model{}, false
}

// NeedsKey reports whether calls to p's default endpoint need a key.
func (p Provider) NeedsKey() bool { return !p.Local && len(p.KeyEnv) > 0 }

// KeyVars says which variables to set, for messages: "A", "A or B",
// "A, B or C".
func (p Provider) KeyVars() string {
	switch n := len(p.KeyEnv); n {
	case 0:
		return ""
	case 1:
		return p.KeyEnv[0]
	default:
		return strings.Join(p.KeyEnv[:n-1], ", ") + " or " + p.KeyEnv[n-1]
	}
}

// All is the catalog, in the order lists show it.
func All() []Provider { return providers() }

// Lookup finds a provider by ID or alias, case-insensitively.
func Lookup(name string) (Provider, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return Provider{}, false
	}
	for _, p := range providers() {
		if p.ID == n || slices.Contains(p.Aliases, n) {
			return p, true
		}
	}
	return Provider{}, false
}

// Names lists the providers' IDs, in catalog order.
func Names() []string {
	var out []string
	for _, p := range providers() {
		out = append(out, p.ID)
	}
	return out
}

// Suggest names the providers closest to a mistyped name (IDs and
// aliases within two edits, or containing it), nearest first.
func Suggest(name string) []string {
	n := strings.ToLower(strings.TrimSpace(name))
	type hit struct {
		id string
		d  int
	}
	best := map[string]int{}
	for _, p := range providers() {
		for _, cand := range append([]string{p.ID}, p.Aliases...) {
			d := typo.Distance(n, cand)
			if len(n) >= 3 && (strings.Contains(cand, n) || strings.Contains(n, cand)) {
				d = min(d, 1)
			}
			if d <= 2 && d < len(n) {
				if old, ok := best[p.ID]; !ok || d < old {
					best[p.ID] = d
				}
			}
		}
	}
	var hits []hit
	for id, d := range best {
		hits = append(hits, hit{id, d})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].id < hits[j].id
	})
	var out []string
	for _, h := range hits {
		out = append(out, h.id)
	}
	return out
}

// UnknownError is the error for a provider name the catalog does not know:
// it says which names are close and lists the rest.
func UnknownError(src, name string) error {
	msg := fmt.Sprintf("%s %q is not a provider this build knows", src, name)
	if n := strings.ToLower(strings.TrimSpace(name)); strings.HasPrefix(n, "custom:") {
		msg += " (it names an entry of the Python Hermes Agent's custom_providers, which this build does not read: set the provider to custom and base_url to the entry's URL)"
	} else if why, ok := pythonOnly[n]; ok {
		msg += " (the Python Hermes Agent reaches it through " + why + ", which this build does not do; use a provider with an API key)"
	} else if s := Suggest(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return fmt.Errorf("%s: use one of %s (custom: any OpenAI-compatible server at base_url; hermes model list shows them all)", msg, strings.Join(Names(), ", "))
}

// pythonOnly are providers of the Python Hermes Agent that log in rather
// than take a key, with how they do.
var pythonOnly = map[string]string{
	"copilot":        "GitHub Copilot's token exchange",
	"github-copilot": "GitHub Copilot's token exchange",
	"copilot-acp":    "the Copilot CLI over ACP",
	"vertex":         "Google Cloud credentials (Vertex AI)",
	"xai-oauth":      "an xAI OAuth login",
	"qwen-oauth":     "the Qwen CLI's OAuth login",
	"minimax-oauth":  "a MiniMax OAuth login",
	"moa":            "its mixture-of-agents presets",
}

// Find finds model id in the catalog: in provider's models when provider
// is set, else in any provider's (the first one listing it).
func Find(provider, id string) (Model, bool) {
	if provider != "" {
		if p, ok := Lookup(provider); ok {
			if m, ok := p.Model(id); ok {
				return m, true
			}
		}
	}
	for _, p := range providers() {
		if m, ok := p.Model(id); ok {
			return m, true
		}
	}
	return Model{}, false
}

// Prices are the catalog's known prices by model ID, the first provider
// listing a model deciding; models with no known price are left out.
func Prices() model.Prices {
	out := model.Prices{}
	for _, p := range providers() {
		for _, m := range p.Models {
			if _, seen := out[m.ID]; m.Price != nil && !seen {
				out[m.ID] = *m.Price
			}
		}
	}
	return out
}
