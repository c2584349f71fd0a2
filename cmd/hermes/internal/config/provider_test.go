package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/schema"
)

// cleanKeys empties every key and base-URL variable the catalog names, so
// the machine's environment decides nothing here.
func cleanKeys(t *testing.T) {
	t.Helper()
	clean(t)
	for _, p := range catalog.All() {
		for _, k := range append([]string{p.BaseURLEnv}, p.KeyEnv...) {
			if k != "" {
				t.Setenv(k, "")
			}
		}
	}
}

// --provider (or model.provider) picks the base URL, the key variable and
// the API mode from the catalog; the first key variable set wins.
func TestProviderFromCatalog(t *testing.T) {
	for _, c := range []struct {
		flag, file   string
		env          map[string]string
		base, keyEnv string
		mode, key    string
	}{
		{flag: "openrouter", base: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", mode: model.ModeChatCompletions,
			env: map[string]string{"OPENROUTER_API_KEY": "or-key"}, key: "or-key"},
		{flag: "gemini", base: "https://generativelanguage.googleapis.com/v1beta", keyEnv: "GEMINI_API_KEY", mode: model.ModeGemini,
			env: map[string]string{"GEMINI_API_KEY": "g-key"}, key: "g-key"},
		{flag: "google", base: "https://generativelanguage.googleapis.com/v1beta", keyEnv: "GOOGLE_API_KEY", mode: model.ModeGemini,
			env: map[string]string{"GOOGLE_API_KEY": "g1", "GEMINI_API_KEY": "g2"}, key: "g1"},
		{file: "deepseek", base: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY", mode: model.ModeChatCompletions},
		{flag: "minimax", base: "https://api.minimax.io/anthropic", keyEnv: "MINIMAX_API_KEY", mode: model.ModeAnthropic},
		{flag: "xai", base: "https://api.x.ai/v1", keyEnv: "XAI_API_KEY", mode: model.ModeResponses},
		{flag: "z.ai", base: "https://api.z.ai/api/paas/v4", keyEnv: "GLM_API_KEY", mode: model.ModeChatCompletions},
		{flag: "ollama", base: "http://localhost:11434/v1", keyEnv: "", mode: model.ModeChatCompletions},
		// The provider's own base-URL variable beats its default.
		{flag: "deepseek", env: map[string]string{"DEEPSEEK_BASE_URL": "http://127.0.0.1:9/v1"}, base: "http://127.0.0.1:9/v1",
			keyEnv: "DEEPSEEK_API_KEY", mode: model.ModeChatCompletions},
		// OPENAI_BASE_URL is OpenAI's, not every provider's.
		{flag: "openrouter", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, base: "https://openrouter.ai/api/v1",
			keyEnv: "OPENROUTER_API_KEY", mode: model.ModeChatCompletions},
	} {
		t.Run(c.flag+c.file, func(t *testing.T) {
			cleanKeys(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			yaml := "model: m\n"
			if c.file != "" {
				yaml = "model:\n  default: m\n  provider: " + c.file + "\n"
			}
			r, err := resolveIn(t, homeWith(t, yaml), Overrides{Provider: c.flag})
			if err != nil {
				t.Fatal(err)
			}
			if r.LLM.BaseURL != c.base || r.LLM.KeyEnv != c.keyEnv || r.Mode != c.mode || r.LLM.APIKey != c.key {
				t.Fatalf("resolved %+v (mode %s), want %s %s %s key %q", r.LLM, r.Mode, c.base, c.keyEnv, c.mode, c.key)
			}
		})
	}
}

// An unknown provider is refused with the names close to it and the list.
func TestUnknownProvider(t *testing.T) {
	cleanKeys(t)
	_, err := resolveIn(t, homeWith(t, "model: m\n"), Overrides{Provider: "openruoter"})
	if err == nil || !strings.Contains(err.Error(), `--provider "openruoter" is not a provider`) || !strings.Contains(err.Error(), "did you mean openrouter") {
		t.Fatalf("error %v", err)
	}
	_, err = resolveIn(t, homeWith(t, "model:\n  default: m\n  provider: gemeni\n"), Overrides{})
	if err == nil || !strings.Contains(err.Error(), "model.provider") || !strings.Contains(err.Error(), "did you mean gemini") {
		t.Fatalf("error %v", err)
	}
	_, err = resolveIn(t, homeWith(t, "model: m\n"), Overrides{Provider: "azure"})
	if err == nil || !strings.Contains(err.Error(), "AZURE_FOUNDRY_BASE_URL") {
		t.Fatalf("azure without an endpoint: %v", err)
	}
}

// The provider --provider picks is the one called: with its base URL
// pointed at a local server, the request arrives there with the key in
// the header that provider's API uses.
func TestProviderCallArrives(t *testing.T) {
	for _, c := range []struct {
		provider, keyVar, header, want string
	}{
		{"openrouter", "OPENROUTER_API_KEY", "Authorization", "Bearer k-1"},
		{"groq", "GROQ_API_KEY", "Authorization", "Bearer k-1"},
		{"minimax", "MINIMAX_API_KEY", "X-Api-Key", "k-1"},
		{"gemini", "GEMINI_API_KEY", "X-Goog-Api-Key", "k-1"},
		{"azure", "AZURE_FOUNDRY_API_KEY", "Api-Key", "k-1"},
	} {
		t.Run(c.provider, func(t *testing.T) {
			cleanKeys(t)
			got := make(chan *http.Request, 4)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r
				http.Error(w, `{"error":{"message":"stop here"}}`, http.StatusTeapot)
			}))
			defer srv.Close()
			p, _ := catalog.Lookup(c.provider)
			t.Setenv(c.keyVar, "k-1")
			base := srv.URL + "/v1"
			if p.BaseURLEnv != "" {
				t.Setenv(p.BaseURLEnv, base)
			}
			o := Overrides{Provider: c.provider}
			if p.BaseURLEnv == "" {
				o.BaseURL = base
			}
			r, err := resolveIn(t, homeWith(t, "model: m\n"), o)
			if err != nil {
				t.Fatal(err)
			}
			prov, err := llm.New(r.LLM)
			if err != nil {
				t.Fatal(err)
			}
			prov.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
			req := <-got
			if req.Header.Get(c.header) != c.want || prov.Name() != p.ID {
				t.Fatalf("%s %s: %s = %q (headers %v), provider %s", req.Method, req.URL, c.header, req.Header.Get(c.header), req.Header, prov.Name())
			}
		})
	}
}

// SetModel writes names YAML would read as something else quoted, and
// turns a `model: NAME` scalar into the mapping form.
func TestSetModel(t *testing.T) {
	cleanKeys(t)
	home := homeWith(t, "model: old-model # mine\n")
	if err := SetModel(home, ModelChoice{Provider: "vllm", Model: "1.5", BaseURL: "http://box:8000/v1"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Name != "1.5" || c.Model.Provider != "vllm" || c.Model.BaseURL != "http://box:8000/v1" || c.Model.APIMode != "" {
		t.Fatalf("model %+v", c.Model)
	}
	if err := SetModel(home, ModelChoice{Provider: "bedrock", Model: "us.amazon.nova-pro-v1:0", APIMode: "bedrock_converse"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := Load(home); c.Model.Name != "us.amazon.nova-pro-v1:0" || c.Model.BaseURL != "" || c.Model.APIMode != "" {
		t.Fatalf("model %+v", c.Model)
	}
}
