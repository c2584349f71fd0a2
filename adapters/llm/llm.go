// Package llm picks and builds the provider for a configuration: it
// resolves the API mode and constructs the matching adapter.
package llm

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/openai"
)

// Config names a provider endpoint.
type Config struct {
	Provider string
	BaseURL  string
	APIKey   string
	// APIMode, when set, wins over every heuristic.
	APIMode string
	// KeyEnv names the environment variable the key came from, re-read
	// after a 401.
	KeyEnv string
	// CallTimeout bounds each model call, stream included
	// (agent.model_call_timeout; zero: agent.DefaultCallTimeout).
	CallTimeout time.Duration
}

// ResolveMode decides the API mode: an explicit api_mode, then the
// provider's name, then the base URL, then chat_completions.
func ResolveMode(c Config) (string, error) {
	switch c.APIMode {
	case agent.ModeChatCompletions, agent.ModeAnthropic, agent.ModeResponses:
		return c.APIMode, nil
	case "":
	default:
		return "", fmt.Errorf("api_mode %q: use %s, %s or %s", c.APIMode, agent.ModeChatCompletions, agent.ModeAnthropic, agent.ModeResponses)
	}
	switch strings.ToLower(c.Provider) {
	case "anthropic", "claude":
		return agent.ModeAnthropic, nil
	case "openai-codex", "codex":
		return agent.ModeResponses, nil
	case "":
	default:
		if c.BaseURL == "" {
			return agent.ModeChatCompletions, nil
		}
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return "", fmt.Errorf("base_url %q: %w", c.BaseURL, err)
		}
		host, path := strings.ToLower(u.Hostname()), strings.ToLower(u.Path)
		switch {
		case strings.HasSuffix(host, "anthropic.com") || strings.HasSuffix(strings.TrimSuffix(path, "/"), "/anthropic"):
			return agent.ModeAnthropic, nil
		case strings.Contains(path, "/backend-api/codex"):
			return agent.ModeResponses, nil
		}
	}
	return agent.ModeChatCompletions, nil
}

// New builds the provider for c.
func New(c Config) (agent.Provider, error) {
	mode, err := ResolveMode(c)
	if err != nil {
		return nil, err
	}
	name := c.Provider
	if name == "" {
		name = "openai"
		if mode == agent.ModeAnthropic {
			name = "anthropic"
		}
	}
	switch mode {
	case agent.ModeAnthropic:
		return anthropic.New(anthropic.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
	case agent.ModeResponses:
		return openai.NewResponses(openai.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
	}
	return openai.NewChat(openai.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
}
