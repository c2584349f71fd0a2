package catalog

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
)

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		name, id, mode, base string
		keys                 []string
	}{
		{"openrouter", "openrouter", model.ModeChatCompletions, "https://openrouter.ai/api/v1", []string{"OPENROUTER_API_KEY"}},
		{"Gemini", "gemini", model.ModeGemini, "https://generativelanguage.googleapis.com/v1beta", []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}},
		{"google", "gemini", model.ModeGemini, "https://generativelanguage.googleapis.com/v1beta", []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}},
		{"moonshot", "kimi-coding", model.ModeChatCompletions, "https://api.moonshot.ai/v1", []string{"KIMI_API_KEY", "KIMI_CODING_API_KEY"}},
		{"z.ai", "zai", model.ModeChatCompletions, "https://api.z.ai/api/paas/v4", []string{"GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"}},
		{"minimax", "minimax", model.ModeAnthropic, "https://api.minimax.io/anthropic", []string{"MINIMAX_API_KEY"}},
		{"hf", "huggingface", model.ModeChatCompletions, "https://router.huggingface.co/v1", []string{"HF_TOKEN"}},
		{"grok", "xai", model.ModeResponses, "https://api.x.ai/v1", []string{"XAI_API_KEY"}},
		{"nous", "nous", model.ModeChatCompletions, "https://inference-api.nousresearch.com/v1", []string{"NOUS_API_KEY"}},
		{"llama.cpp", "llamacpp", model.ModeChatCompletions, "http://localhost:8080/v1", nil},
		{" LM-Studio ", "lmstudio", model.ModeChatCompletions, "http://127.0.0.1:1234/v1", []string{"LM_API_KEY"}},
		{"azure", "azure-foundry", model.ModeChatCompletions, "", []string{"AZURE_FOUNDRY_API_KEY"}},
		{"claude", "anthropic", model.ModeAnthropic, "https://api.anthropic.com", []string{"ANTHROPIC_API_KEY"}},
	} {
		p, ok := Lookup(c.name)
		if !ok || p.ID != c.id || p.Mode != c.mode || p.BaseURL != c.base || !slices.Equal(p.KeyEnv, c.keys) {
			t.Errorf("Lookup(%q) = %+v, %v; want %s %s %s %v", c.name, p, ok, c.id, c.mode, c.base, c.keys)
		}
	}
	if _, ok := Lookup("nosuch"); ok {
		t.Error("an unknown provider was found")
	}
	if _, ok := Lookup(""); ok {
		t.Error("the empty name was found")
	}
}

// The table is well formed: unique names, a known mode, parseable URLs,
// a key or a reason to have none, and no price of zero dollars standing
// for an unknown one.
func TestTableIsWellFormed(t *testing.T) {
	seen := map[string]string{}
	modes := []string{model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses, model.ModeGemini, model.ModeBedrock}
	for _, p := range All() {
		for _, n := range append([]string{p.ID}, p.Aliases...) {
			if n != strings.ToLower(n) {
				t.Errorf("%s: name %q is not lower case", p.ID, n)
			}
			if other, dup := seen[n]; dup {
				t.Errorf("%q names both %s and %s", n, other, p.ID)
			}
			seen[n] = p.ID
		}
		if !slices.Contains(modes, p.Mode) {
			t.Errorf("%s: mode %q", p.ID, p.Mode)
		}
		if p.Label == "" {
			t.Errorf("%s: no label", p.ID)
		}
		if p.BaseURL == "" && !p.NeedsBaseURL && p.ID != "openai-codex" && p.Mode != model.ModeBedrock {
			t.Errorf("%s: no base URL and none needed", p.ID)
		}
		if p.BaseURL != "" {
			if u, err := url.Parse(p.BaseURL); err != nil || u.Host == "" {
				t.Errorf("%s: base URL %q", p.ID, p.BaseURL)
			}
		}
		if len(p.KeyEnv) == 0 && !p.Local && p.Mode != model.ModeBedrock {
			t.Errorf("%s: no key variable and not local", p.ID)
		}
		ids := map[string]bool{}
		for _, m := range p.Models {
			if ids[m.ID] {
				t.Errorf("%s: model %s twice", p.ID, m.ID)
			}
			ids[m.ID] = true
			if m.Price != nil && (m.Price.Input <= 0 || m.Price.Output <= 0) {
				t.Errorf("%s/%s: a price of zero stands for an unknown one: %+v", p.ID, m.ID, *m.Price)
			}
			if m.Window < 0 {
				t.Errorf("%s/%s: window %d", p.ID, m.ID, m.Window)
			}
		}
	}
	for _, want := range []string{"openrouter", "nous", "gemini", "deepseek", "xai", "groq", "mistral", "kimi-coding", "zai", "minimax",
		"huggingface", "ollama", "lmstudio", "vllm", "llamacpp", "azure-foundry", "anthropic", "openai"} {
		if _, ok := Lookup(want); !ok {
			t.Errorf("%s is missing from the catalog", want)
		}
	}
}

func TestModelsWindowsAndPrices(t *testing.T) {
	p, _ := Lookup("anthropic")
	if p.DefaultModel() == "" {
		t.Fatal("anthropic lists no models")
	}
	m, ok := p.Model("claude-sonnet-4-6")
	if !ok || m.Window != 1_000_000 || m.Price == nil || m.Price.Input != 3 || m.Price.Output != 15 {
		t.Fatalf("claude-sonnet-4-6: %+v %v", m, ok)
	}
	// A model with no published price keeps an unknown price.
	g, ok := Find("gemini", "gemini-3.5-flash")
	if !ok || g.Price != nil || g.Window != 1_048_576 {
		t.Fatalf("gemini-3.5-flash: %+v %v", g, ok)
	}
	if _, ok := Find("", "deepseek-reasoner"); !ok {
		t.Fatal("Find without a provider misses deepseek-reasoner")
	}
	if _, ok := Find("", "no-such-model"); ok {
		t.Fatal("Find found a model nobody lists")
	}
	prices := Prices()
	if pr, ok := prices["deepseek-chat"]; !ok || pr.Input != 0.14 {
		t.Fatalf("deepseek-chat price %+v %v", pr, ok)
	}
	if _, ok := prices["gemini-3.5-flash"]; ok {
		t.Fatal("an unknown price entered the price table")
	}
	if p, _ := Lookup("vllm"); p.NeedsKey() || p.DefaultModel() != "" {
		t.Fatalf("vllm: %+v", p)
	}
	if p, _ := Lookup("gemini"); !p.NeedsKey() || p.KeyVars() != "GOOGLE_API_KEY or GEMINI_API_KEY" {
		t.Fatalf("gemini key vars %q", p.KeyVars())
	}
}

func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{{"openrouterr", "openrouter"}, {"gemeni", "gemini"}, {"deepsek", "deepseek"}, {"antropic", "anthropic"}, {"lmstudi", "lmstudio"}} {
		if s := Suggest(c.in); len(s) == 0 || s[0] != c.want {
			t.Errorf("Suggest(%q) = %v, want %s first", c.in, s, c.want)
		}
	}
	if s := Suggest("zzzzzzzz"); len(s) != 0 {
		t.Errorf("Suggest(zzzzzzzz) = %v", s)
	}
	if msg := UnknownError("model.provider", "copilot").Error(); !strings.Contains(msg, "token exchange") || !strings.Contains(msg, "use a provider with an API key") {
		t.Fatalf("a Python-only provider: %s", msg)
	}
	if msg := UnknownError("model.provider", "custom:my-box").Error(); !strings.Contains(msg, "custom_providers") || !strings.Contains(msg, "base_url") {
		t.Fatalf("a Python custom provider: %s", msg)
	}
	err := UnknownError("--provider", "gemeni")
	if msg := err.Error(); !strings.Contains(msg, `"gemeni" is not a provider`) || !strings.Contains(msg, "did you mean gemini") || !strings.Contains(msg, "openai, anthropic, openrouter") {
		t.Fatalf("unknown error: %s", msg)
	}
}
