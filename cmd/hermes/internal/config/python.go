package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// pythonOnly are the keys of the Python Hermes Agent's config.yaml that
// this build honours though they are not its own: each maps onto the key
// of this build that does the same thing, unless that key is set too.
type pythonOnly struct {
	Model       yaml.Node `yaml:"model"`
	Compression struct {
		// SummaryModel, SummaryProvider and SummaryBaseURL are the
		// compression model before the Python agent moved it to
		// auxiliary.compression (its migrate_config does the same).
		SummaryModel    string `yaml:"summary_model"`
		SummaryProvider string `yaml:"summary_provider"`
		SummaryBaseURL  string `yaml:"summary_base_url"`
	} `yaml:"compression"`
	Delegation struct {
		// MaxConcurrentChildren is this build's delegation.max_concurrent,
		// MaxSpawnDepth its delegation.max_depth (1: subagents do not
		// delegate further).
		MaxConcurrentChildren int `yaml:"max_concurrent_children"`
		MaxSpawnDepth         int `yaml:"max_spawn_depth"`
	} `yaml:"delegation"`
}

// pythonModel is the Python agent's model: mapping beyond ModelRef.
type pythonModel struct {
	APIKey        string `yaml:"api_key"`
	ContextLength int    `yaml:"context_length"`
	MaxTokens     int    `yaml:"max_tokens"`
	// SupportsVision says whether the main model takes images (unset:
	// the model catalog decides).
	SupportsVision *bool `yaml:"supports_vision"`
}

// honourPython sets c's keys from the Python agent's keys that mean the
// same (see pythonOnly), and returns those it used.
func (c *Config) honourPython(doc *yaml.Node) ([]string, error) {
	var p pythonOnly
	if err := doc.Decode(&p); err != nil {
		return nil, err
	}
	var used []string
	use := func(key string, unset bool, set func()) {
		if unset {
			set()
		}
		used = append(used, key)
	}
	if p.Model.Kind == yaml.MappingNode {
		var m pythonModel
		if err := p.Model.Decode(&m); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if m.ContextLength < 0 {
			return nil, fmt.Errorf("model.context_length must be a number of tokens, got %d", m.ContextLength)
		}
		if m.MaxTokens < 0 {
			return nil, fmt.Errorf("model.max_tokens must be a number of tokens, got %d", m.MaxTokens)
		}
		if m.APIKey != "" {
			use("model.api_key", c.APIKey == "", func() { c.APIKey = m.APIKey })
		}
		if m.ContextLength > 0 {
			use("model.context_length", c.ContextWindow == 0, func() { c.ContextWindow = m.ContextLength })
		}
		if m.MaxTokens > 0 {
			use("model.max_tokens", c.Agent.MaxTokens == 0, func() { c.Agent.MaxTokens = m.MaxTokens })
		}
		if m.SupportsVision != nil {
			use("model.supports_vision", true, func() { c.supportsVision = m.SupportsVision })
		}
	}
	aux := &c.Auxiliary.Compression
	if v := strings.TrimSpace(p.Compression.SummaryModel); v != "" {
		use("compression.summary_model", aux.Name == "", func() { aux.Name = v })
	}
	if v := strings.TrimSpace(p.Compression.SummaryProvider); v != "" && v != "auto" {
		use("compression.summary_provider", aux.Provider == "", func() { aux.Provider = v })
	}
	if v := strings.TrimSpace(p.Compression.SummaryBaseURL); v != "" {
		use("compression.summary_base_url", aux.BaseURL == "", func() { aux.BaseURL = v })
	}
	d := &c.Delegation
	if v := p.Delegation.MaxConcurrentChildren; v > 0 {
		use("delegation.max_concurrent_children", d.MaxConcurrent == 0, func() { d.MaxConcurrent = v })
	}
	if v := p.Delegation.MaxSpawnDepth; v > 0 {
		use("delegation.max_spawn_depth", d.MaxDepth == 0, func() { d.MaxDepth = v })
	}
	return used, nil
}

// IgnoredWarning is the one line that names the keys of the Python agent
// this build does not use (empty when there are none).
func (c Config) IgnoredWarning(path string) string {
	if len(c.ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: ignoring %d key(s) of the Python Hermes Agent this build has no use for: %s",
		path, len(c.ignored), strings.Join(c.ignored, ", "))
}

// dropUsed removes the keys honoured from the ignored ones.
func dropUsed(ignored, used []string) []string {
	return slices.DeleteFunc(ignored, func(k string) bool { return slices.Contains(used, k) })
}

// authPoolKey is the API key the Python agent's auth.json in home holds for
// provider (its credential_pool, as `hermes auth add PROVIDER --type
// api-key` writes it): the entry of the lowest priority that is an API key
// and not marked exhausted. OAuth entries are left to the Python agent,
// which refreshes them. An absent or unreadable auth.json gives "".
func authPoolKey(home, provider string) string {
	b, err := os.ReadFile(filepath.Join(home, "auth.json"))
	if err != nil || provider == "" {
		return ""
	}
	var auth struct {
		Pool map[string][]struct {
			AuthType    string `json:"auth_type"`
			AccessToken string `json:"access_token"`
			Priority    int    `json:"priority"`
			LastStatus  string `json:"last_status"`
		} `json:"credential_pool"`
	}
	if json.Unmarshal(b, &auth) != nil {
		return ""
	}
	key, best := "", 0
	for _, e := range auth.Pool[provider] {
		if e.AuthType != "api_key" || e.AccessToken == "" || e.LastStatus == "exhausted" {
			continue
		}
		if key == "" || e.Priority < best {
			key, best = e.AccessToken, e.Priority
		}
	}
	return key
}
