package llm

import (
	"testing"

	"github.com/hermes-go/hermes/actors/model"
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
