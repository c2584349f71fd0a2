// Package llm picks and builds the provider for a configuration: it
// resolves the API mode and constructs the matching adapter.
package llm

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
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
	// (agent.model_call_timeout; zero: model.DefaultCallTimeout).
	CallTimeout time.Duration
}

// ResolveMode decides the API mode: an explicit api_mode, then the
// provider's name, then the base URL, then chat_completions.
func ResolveMode(c Config) (string, error) {
	switch c.APIMode {
	case model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses:
		return c.APIMode, nil
	case "":
	default:
		return "", fmt.Errorf("api_mode %q: use %s, %s or %s", c.APIMode, model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses)
	}
	switch strings.ToLower(c.Provider) {
	case "anthropic", "claude":
		return model.ModeAnthropic, nil
	case "openai-codex", "codex":
		return model.ModeResponses, nil
	case "":
	default:
		if c.BaseURL == "" {
			return model.ModeChatCompletions, nil
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
			return model.ModeAnthropic, nil
		case strings.Contains(path, "/backend-api/codex"):
			return model.ModeResponses, nil
		}
	}
	return model.ModeChatCompletions, nil
}

// New builds the provider for c.
func New(c Config) (model.Provider, error) {
	mode, err := ResolveMode(c)
	if err != nil {
		return nil, err
	}
	name := c.Provider
	if name == "" {
		name = "openai"
		if mode == model.ModeAnthropic {
			name = "anthropic"
		}
	}
	switch mode {
	case model.ModeAnthropic:
		return anthropic.New(anthropic.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
	case model.ModeResponses:
		return openai.NewResponses(openai.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
	}
	return openai.NewChat(openai.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout}), nil
}

// Known is a provider this build knows by name: its API mode, its
// default base URL ("" for the SDK's own) and the environment variable
// its key is read from.
type Known struct {
	Name, Mode, BaseURL, KeyEnv string
	Aliases                     []string
}

// Providers are the providers --provider and model.provider accept.
// custom is any server speaking the OpenAI chat API at base_url.
func Providers() []Known {
	return []Known{
		{Name: "openai", Mode: model.ModeChatCompletions, KeyEnv: "OPENAI_API_KEY"},
		{Name: "anthropic", Mode: model.ModeAnthropic, KeyEnv: "ANTHROPIC_API_KEY", Aliases: []string{"claude"}},
		{Name: "openrouter", Mode: model.ModeChatCompletions, BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY"},
		{Name: "openai-codex", Mode: model.ModeResponses, KeyEnv: "OPENAI_API_KEY", Aliases: []string{"codex"}},
		{Name: "custom", Mode: model.ModeChatCompletions, KeyEnv: "OPENAI_API_KEY", Aliases: []string{"local"}},
	}
}

// Lookup finds a known provider by name or alias (case-insensitive).
func Lookup(name string) (Known, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, k := range Providers() {
		if k.Name == n {
			return k, true
		}
		for _, a := range k.Aliases {
			if a == n {
				return k, true
			}
		}
	}
	return Known{}, false
}

// ProviderNames lists the known providers, for error messages.
func ProviderNames() string {
	var names []string
	for _, k := range Providers() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// NeedsKey reports whether c's endpoint is a public service that refuses
// calls without a key (a local or self-hosted server usually takes none).
func NeedsKey(c Config) bool {
	if c.BaseURL == "" {
		return true // the SDK's own endpoint: api.openai.com, api.anthropic.com
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, public := range []string{"api.openai.com", "api.anthropic.com", "openrouter.ai", "chatgpt.com"} {
		if host == public || strings.HasSuffix(host, "."+public) {
			return true
		}
	}
	return false
}
