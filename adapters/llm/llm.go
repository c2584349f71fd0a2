// Package llm picks and builds the provider for a configuration: it
// resolves the API mode and constructs the matching adapter.
package llm

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/bedrock"
	"github.com/hermes-go/hermes/adapters/llm/gemini"
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
	// FirstByteTimeout bounds the wait for the server's answer to each
	// call (agent.first_byte_timeout; zero: model.DefaultFirstByteTimeout,
	// negative: none).
	FirstByteTimeout time.Duration
}

// ResolveMode decides the API mode: an endpoint that speaks only one
// (Google's native Gemini host, Bedrock's runtime), then an explicit api_mode, then the
// provider's catalog entry, then the base URL, then chat_completions.
func ResolveMode(c Config) (string, error) {
	if IsPlugin(c.Provider) {
		return model.ModeChatCompletions, nil
	}
	if isNativeGemini(c.BaseURL) {
		return model.ModeGemini, nil
	}
	if u, err := url.Parse(c.BaseURL); err == nil && strings.HasPrefix(strings.ToLower(u.Hostname()), "bedrock-runtime.") &&
		strings.HasSuffix(strings.ToLower(u.Hostname()), ".amazonaws.com") {
		return model.ModeBedrock, nil
	}
	switch c.APIMode {
	case model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses, model.ModeGemini, model.ModeBedrock:
		return c.APIMode, nil
	case "":
	default:
		return "", fmt.Errorf("api_mode %q: use %s, %s, %s, %s or %s", c.APIMode, model.ModeChatCompletions, model.ModeAnthropic,
			model.ModeResponses, model.ModeGemini, model.ModeBedrock)
	}
	if u, err := url.Parse(c.BaseURL); err == nil && strings.EqualFold(u.Hostname(), "generativelanguage.googleapis.com") {
		return model.ModeChatCompletions, nil // Gemini's OpenAI-compatible path
	}
	if known, ok := catalog.Lookup(c.Provider); ok && (c.BaseURL == "" || c.BaseURL == known.BaseURL || known.Mode != model.ModeChatCompletions) {
		return known.Mode, nil
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

// isNativeGemini: Google's Gemini host outside its OpenAI-compatible
// /openai path speaks only the native API.
func isNativeGemini(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Hostname(), "generativelanguage.googleapis.com") && !strings.Contains(strings.ToLower(u.Path), "/openai")
}

// New builds the provider for c.
func New(c Config) (model.Provider, error) {
	if IsPlugin(c.Provider) {
		return nil, fmt.Errorf("provider %s is a plugin's: it is reached through the plugins of a chat or gateway", c.Provider)
	}
	mode, err := ResolveMode(c)
	if err != nil {
		return nil, err
	}
	name := c.Provider
	known, isKnown := catalog.Lookup(name)
	if isKnown {
		name = known.ID
	}
	if name == "" {
		name = "openai"
		if mode == model.ModeAnthropic {
			name = "anthropic"
		}
	}
	o := openai.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout, FirstByteTimeout: c.FirstByteTimeout}
	if isKnown && known.KeyHeader != "" && c.APIKey != "" {
		o.Headers = map[string]string{known.KeyHeader: c.APIKey}
	}
	switch mode {
	case model.ModeAnthropic:
		return anthropic.New(anthropic.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout, FirstByteTimeout: c.FirstByteTimeout}), nil
	case model.ModeResponses:
		return openai.NewResponses(o), nil
	case model.ModeGemini:
		return gemini.New(gemini.Options{Provider: name, BaseURL: c.BaseURL, APIKey: c.APIKey, CallTimeout: c.CallTimeout, FirstByteTimeout: c.FirstByteTimeout})
	case model.ModeBedrock:
		return bedrock.New(context.Background(), bedrock.Options{Provider: name, BaseURL: c.BaseURL, CallTimeout: c.CallTimeout, FirstByteTimeout: c.FirstByteTimeout})
	}
	return openai.NewChat(o), nil
}

// Known is a provider this build knows by name: its API mode, its
// default base URL ("" for the SDK's own) and the environment variable
// its key is read from (the first of catalog.Provider.KeyEnv).
type Known struct {
	Name, Mode, BaseURL, KeyEnv string
	Aliases                     []string
}

// Providers are the providers --provider and model.provider accept
// (actors/model/catalog). custom is any server speaking the OpenAI chat
// API at base_url.
func Providers() []Known {
	var out []Known
	for _, p := range catalog.All() {
		out = append(out, knownOf(p))
	}
	return out
}

func knownOf(p catalog.Provider) Known {
	k := Known{Name: p.ID, Mode: p.Mode, BaseURL: p.BaseURL, Aliases: p.Aliases}
	if len(p.KeyEnv) > 0 {
		k.KeyEnv = p.KeyEnv[0]
	}
	return k
}

// Lookup finds a known provider by name or alias (case-insensitive).
func Lookup(name string) (Known, bool) {
	p, ok := catalog.Lookup(name)
	if !ok {
		return Known{}, false
	}
	return knownOf(p), true
}

// ProviderNames lists the known providers, for error messages.
func ProviderNames() string {
	return strings.Join(catalog.Names(), ", ")
}

// NeedsKey reports whether c's endpoint is a public service that refuses
// calls without a key (a local or self-hosted server usually takes none).
func NeedsKey(c Config) bool {
	if IsPlugin(c.Provider) {
		return false // the plugin holds whatever key it needs
	}
	if p, ok := catalog.Lookup(c.Provider); ok && c.BaseURL == p.BaseURL {
		return p.NeedsKey()
	}
	if c.BaseURL == "" {
		return true // the SDK's own endpoint: api.openai.com, api.anthropic.com
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	public := []string{"api.openai.com", "api.anthropic.com", "openrouter.ai", "chatgpt.com"}
	for _, p := range catalog.All() {
		if pu, err := url.Parse(p.BaseURL); err == nil && p.NeedsKey() && pu.Hostname() != "" {
			public = append(public, pu.Hostname())
		}
	}
	for _, public := range public {
		if host == public || strings.HasSuffix(host, "."+public) {
			return true
		}
	}
	return false
}

// IsPlugin says whether provider names a plugin's model provider
// ("plugin:NAME", see adapters/plugins).
func IsPlugin(provider string) bool {
	name, ok := strings.CutPrefix(provider, "plugin:")
	return ok && name != ""
}
