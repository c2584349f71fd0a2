package llm

import (
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
)

func TestResolveMode(t *testing.T) {
	cases := []struct {
		c    Config
		want string
	}{
		{Config{}, agent.ModeChatCompletions},
		{Config{APIMode: agent.ModeResponses, Provider: "anthropic"}, agent.ModeResponses},
		{Config{Provider: "anthropic"}, agent.ModeAnthropic},
		{Config{Provider: "openai-codex"}, agent.ModeResponses},
		{Config{Provider: "openrouter", BaseURL: "https://api.anthropic.com"}, agent.ModeAnthropic},
		{Config{Provider: "openrouter"}, agent.ModeChatCompletions},
		{Config{BaseURL: "https://api.anthropic.com/v1"}, agent.ModeAnthropic},
		{Config{BaseURL: "https://api.minimax.io/anthropic"}, agent.ModeAnthropic},
		{Config{BaseURL: "https://chatgpt.com/backend-api/codex"}, agent.ModeResponses},
		{Config{BaseURL: "http://127.0.0.1:8080/v1"}, agent.ModeChatCompletions},
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
