package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

func TestResolveMode(t *testing.T) {
	cases := []struct {
		c    Config
		want string
	}{
		{Config{}, model.ModeChatCompletions},
		{Config{APIMode: model.ModeResponses, Provider: "anthropic"}, model.ModeResponses},
		{Config{Provider: "anthropic"}, model.ModeAnthropic},
		{Config{Provider: "openai-codex"}, model.ModeResponses},
		{Config{Provider: "openrouter", BaseURL: "https://api.anthropic.com"}, model.ModeAnthropic},
		{Config{Provider: "openrouter"}, model.ModeChatCompletions},
		{Config{BaseURL: "https://api.anthropic.com/v1"}, model.ModeAnthropic},
		{Config{BaseURL: "https://api.minimax.io/anthropic"}, model.ModeAnthropic},
		{Config{BaseURL: "https://chatgpt.com/backend-api/codex"}, model.ModeResponses},
		{Config{BaseURL: "http://127.0.0.1:8080/v1"}, model.ModeChatCompletions},
		{Config{Provider: "gemini"}, model.ModeGemini},
		{Config{Provider: "google", BaseURL: "http://127.0.0.1:9/v1beta"}, model.ModeGemini},
		{Config{BaseURL: "https://generativelanguage.googleapis.com/v1beta"}, model.ModeGemini},
		// A stale api_mode does not send native Gemini's host chat requests.
		{Config{APIMode: model.ModeChatCompletions, BaseURL: "https://generativelanguage.googleapis.com/v1beta"}, model.ModeGemini},
		{Config{Provider: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/"}, model.ModeChatCompletions},
		{Config{Provider: "minimax", BaseURL: "http://127.0.0.1:9"}, model.ModeAnthropic},
		{Config{Provider: "xai"}, model.ModeResponses},
		{Config{Provider: "deepseek"}, model.ModeChatCompletions},
		{Config{Provider: "aws"}, model.ModeBedrock},
		{Config{BaseURL: "https://bedrock-runtime.eu-west-1.amazonaws.com"}, model.ModeBedrock},
		{Config{BaseURL: "https://bedrock-runtime.eu-west-1.amazonaws.com.evil.test/v1"}, model.ModeChatCompletions},
	}
	for _, c := range cases {
		got, err := ResolveMode(c.c)
		if err != nil || got != c.want {
			t.Errorf("%+v → %s (%v), want %s", c.c, got, err, c.want)
		}
	}
	if _, err := ResolveMode(Config{APIMode: "smoke_signals"}); err == nil {
		t.Error("an unknown api_mode was accepted")
	}
}

func TestNeedsKey(t *testing.T) {
	for _, c := range []struct {
		c    Config
		want bool
	}{
		{Config{}, true},
		{Config{Provider: "deepseek", BaseURL: "https://api.deepseek.com/v1"}, true},
		{Config{BaseURL: "https://api.groq.com/openai/v1"}, true},
		{Config{Provider: "ollama", BaseURL: "http://localhost:11434/v1"}, false},
		{Config{Provider: "lmstudio", BaseURL: "http://127.0.0.1:1234/v1"}, false},
		{Config{Provider: "deepseek", BaseURL: "http://127.0.0.1:9/v1"}, false},
		{Config{BaseURL: "http://10.0.0.5:8000/v1"}, false},
		{Config{Provider: "bedrock"}, false}, // AWS credentials, not a key
		{Config{Provider: "openai-codex"}, true},
	} {
		if got := NeedsKey(c.c); got != c.want {
			t.Errorf("NeedsKey(%+v) = %v, want %v", c.c, got, c.want)
		}
	}
}

// Azure takes its key in an api-key header: the provider built for it
// sends one.
func TestAzureKeyHeader(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusTeapot)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: "azure", BaseURL: srv.URL + "/openai/v1", APIKey: "az-key"})
	if err != nil {
		t.Fatal(err)
	}
	p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	h := <-got
	if h.Get("api-key") != "az-key" || p.Name() != "azure-foundry" {
		t.Fatalf("headers %v, name %s", h, p.Name())
	}
}
