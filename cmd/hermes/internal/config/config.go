// Package config is hermes' configuration: $HERMES_HOME/config.yaml with
// its keys checked, the environment (.env included) and the defaults, and
// the flags a command passes in (Overrides, Home, Store, LogLevel), so
// that which one wins is decided in one place and tested here.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/adapters/tools/web"
)

// Config is $HERMES_HOME/config.yaml, with Hermes' keys. Flags beat the
// environment, which beats the file.
type Config struct {
	Model             ModelRef          `yaml:"model"`
	Provider          string            `yaml:"provider"`
	BaseURL           string            `yaml:"base_url"`
	APIMode           string            `yaml:"api_mode"`
	APIKey            string            `yaml:"api_key"`
	FallbackProviders []ModelRef        `yaml:"fallback_providers"`
	Agent             AgentConfig       `yaml:"agent"`
	Compression       CompressionConfig `yaml:"compression"`
	Auxiliary         struct {
		Compression ModelRef `yaml:"compression"`
		// Vision is the model that describes images for a main model that
		// cannot see them (upstream's auxiliary.vision).
		Vision ModelRef `yaml:"vision"`
		// TitleGeneration is Hermes' auxiliary.title_generation: enabled
		// (default true) names a new session after its first exchange in
		// an interactive chat.
		TitleGeneration struct {
			Enabled *bool `yaml:"enabled"`
		} `yaml:"title_generation"`
		// BackgroundReview is the model of the background review
		// (upstream's auxiliary.background_review; provider auto or
		// unset: the auxiliary model, else the main one).
		BackgroundReview ReviewModelRef `yaml:"background_review"`
	} `yaml:"auxiliary"`
	Budget struct {
		MaxCostPerSession float64 `yaml:"max_cost_per_session"`
		MaxCostPerDay     float64 `yaml:"max_cost_per_day"`
	} `yaml:"budget"`
	ContextWindow    int              `yaml:"context_window"`
	Terminal         map[string]any   `yaml:"terminal"`
	Sandbox          SandboxConfig    `yaml:"sandbox"`
	Prices           map[string]Price `yaml:"prices"`
	Tools            tools.Selection  `yaml:"tools"`
	CommandAllowlist []string         `yaml:"command_allowlist"`
	Web              web.Config       `yaml:"web"`
	Delegation       struct {
		MaxDepth       int `yaml:"max_depth"`
		MaxConcurrent  int `yaml:"max_concurrent"`
		MaxPerResponse int `yaml:"max_per_response"`
	} `yaml:"delegation"`
	// Sessions: sessions.idle_after is how long a session stays idle
	// before its actor passivates (a duration; never: it stays).
	Sessions struct {
		IdleAfter string `yaml:"idle_after"`
	} `yaml:"sessions"`
	Gateway   GatewayConfig   `yaml:"gateway"`
	Platforms PlatformsConfig `yaml:"platforms"`
	Cron      CronConfig      `yaml:"cron"`
	// MCPServers are the MCP servers whose tools Hermes offers (cmd/hermes/mcp*.go).
	MCPServers map[string]mcp.ServerConfig `yaml:"mcp_servers"`
	// Hooks are shell hooks, by event.
	Hooks hooks.Config `yaml:"hooks"`
	// HooksAutoAccept allows every configured shell hook without asking
	// (as --accept-hooks and HERMES_ACCEPT_HOOKS=1 do).
	HooksAutoAccept bool `yaml:"hooks_auto_accept"`
	// Store chooses the event store: embedded (the default), a
	// postgres:// URL or an esdb:// connection string (see Store).
	Store string `yaml:"store"`
	// Cluster is where agent nodes and a gateway in cluster mode meet
	// (cmd/hermes/node_run.go).
	Cluster ClusterConfig `yaml:"cluster"`
	// Telemetry is where the gateway and the nodes send traces and serve
	// metrics (cmd/hermes/telemetry.go).
	Telemetry TelemetryConfig `yaml:"telemetry"`
	// STT, TTS and Voice are upstream's speech sections (voice.go);
	// ImageGen is image_gen: (image_generate).
	STT   STTConfig `yaml:"stt"`
	TTS   TTSConfig `yaml:"tts"`
	Voice struct {
		AutoTTS bool `yaml:"auto_tts"`
	} `yaml:"voice"`
	ImageGen ImageGenConfig `yaml:"image_gen"`
	// Skills and Memory are the skills' and memory's sections
	// (learning.go).
	Skills SkillsConfig `yaml:"skills"`
	Memory MemoryConfig `yaml:"memory"`
	// Display and Streaming are how gateway chats see a turn while it
	// runs: tool-progress lines, the answer streamed (display.go).
	Display   DisplayConfig   `yaml:"display"`
	Streaming StreamingConfig `yaml:"streaming"`

	// ignored are the keys of the Python Hermes Agent's config this build
	// does not use (dotted), warned about.
	ignored []string
	// supportsVision is model.supports_vision (the Python agent's key):
	// whether the main model takes images; nil lets the catalog decide.
	supportsVision *bool
}

// Ignored are the keys of the file this build does not use (the Python
// Hermes Agent's, dotted: agent.reasoning_effort), to warn about.
func (c Config) Ignored() []string { return c.ignored }

// ModelRef is a model name, or Hermes' mapping form {default, provider,
// base_url, api_mode}.
type ModelRef struct {
	Name     string `yaml:"default"`
	Model    string `yaml:"model"`
	Provider string `yaml:"provider"`
	BaseURL  string `yaml:"base_url"`
	APIMode  string `yaml:"api_mode"`
	// APIKeyEnv names the environment variable holding this entry's key
	// (fallback_providers).
	APIKeyEnv string `yaml:"api_key_env"`
}

// ReviewModelRef is auxiliary.background_review: a model as ModelRef has
// it, and upstream's timeout (seconds).
type ReviewModelRef struct {
	ModelRef `yaml:",inline"`
	Timeout  float64 `yaml:"timeout"`
}

// UnmarshalYAML reads the model as ModelRef does, and the timeout.
func (m *ReviewModelRef) UnmarshalYAML(n *yaml.Node) error {
	if err := m.ModelRef.UnmarshalYAML(n); err != nil {
		return err
	}
	if n.Kind == yaml.MappingNode {
		var t struct {
			Timeout float64 `yaml:"timeout"`
		}
		if err := n.Decode(&t); err != nil {
			return err
		}
		m.Timeout = t.Timeout
	}
	return nil
}

// UnmarshalYAML accepts both `model: name` and the mapping form.
func (m *ModelRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		m.Name = n.Value
		return nil
	}
	type plain ModelRef
	if err := n.Decode((*plain)(m)); err != nil {
		return err
	}
	if m.Name == "" {
		m.Name = m.Model
	}
	return nil
}

// CompressionConfig is the compression: section; enabled defaults to true.
type CompressionConfig struct {
	Enabled       *bool   `yaml:"enabled"`
	Threshold     float64 `yaml:"threshold"`
	TargetRatio   float64 `yaml:"target_ratio"`
	ProtectFirstN int     `yaml:"protect_first_n"`
	ProtectLastN  int     `yaml:"protect_last_n"`
}

// AgentConfig is the agent: section.
type AgentConfig struct {
	MaxTurns         int      `yaml:"max_turns"`
	BudgetWarningAt  *float64 `yaml:"budget_warning_at"`
	ToolTimeout      string   `yaml:"tool_timeout"`
	MaxParallelTools int      `yaml:"max_parallel_tools"`
	MaxTokens        int      `yaml:"max_tokens"`
	ModelCallTimeout string   `yaml:"model_call_timeout"`
	// Personalities are what /personality offers, by name (Hermes' key).
	Personalities map[string]Personality `yaml:"personalities"`
	// FirstByteTimeout bounds the wait for the model server's answer to a
	// call: seconds (120) or a duration (2m); 0 turns it off.
	FirstByteTimeout string `yaml:"first_byte_timeout"`
}

// SandboxConfig is the sandbox: section, the kernel sandbox of the local
// terminal backend, execute_code and cron scripts (adapters/sandbox).
type SandboxConfig struct {
	// Mode is read-only, workspace-write (default) or full-access.
	Mode string `yaml:"mode"`
	// WritableRoots are writable beside the working directory.
	WritableRoots []string `yaml:"writable_roots"`
	// Readable are hidden places (credential stores) to show again,
	// read-only.
	Readable []string `yaml:"readable"`
	// Network is on (default), off, or allow (with NetworkAllow).
	Network      string   `yaml:"network"`
	NetworkAllow []string `yaml:"network_allow"`
	// Env names more variables commands receive (patterns such as GH_*).
	Env          []string `yaml:"env"`
	MaxProcesses int      `yaml:"max_processes"`
	MaxMemoryMB  int      `yaml:"max_memory_mb"`
}

// Price is a prices: entry, US dollars per million tokens.
type Price = model.Price

// Resolved is the configuration after file, environment and flags.
type Resolved struct {
	Model           string
	LLM             llm.Config
	Mode            string
	MaxTurns        int
	BudgetWarningAt float64
	ToolTimeout     time.Duration
	MaxParallel     int
	MaxTokens       int
	Prices          model.Prices
	Yolo            bool
	Tools           tools.Selection
	AllowList       []string
	TerminalTimeout time.Duration
	ApprovalTimeout time.Duration
	Web             web.Config
	// Backend is terminal.backend: local (default), ssh or docker.
	Backend terminal.Backend
	// EnvPassthrough is terminal.env_passthrough: variables (names or
	// patterns such as GH_*) that tools' child processes keep although
	// they look secret; their values are still redacted from output.
	EnvPassthrough []string
	// Fallbacks are fallback_providers, with their models.
	Fallbacks      []llm.Config
	FallbackModels []string
	// BackoffBase scales the retry waits (HERMES_BACKOFF_BASE, for tests).
	BackoffBase time.Duration
	Compression compress.Config
	// Aux is the auxiliary model for summaries (zero: the main one).
	Aux      llm.Config
	AuxModel string
	// Vision is model.supports_vision (nil: ask the catalog); VisionAux
	// and VisionModel are auxiliary.vision (VisionModel "": none).
	Vision      *bool
	VisionAux   llm.Config
	VisionModel string
	// AutoTitle: interactive chats are titled by the auxiliary model.
	AutoTitle                             bool
	ContextWindow                         int
	MaxCostPerSession, MaxCostPerDay      float64
	MaxDepth, MaxConcurrent, MaxDelegates int
	// IdleAfter is sessions.idle_after (0: session.DefaultIdleAfter,
	// negative: never).
	IdleAfter time.Duration
	// MCPServers and Hooks are as config has them, validated.
	MCPServers map[string]mcp.ServerConfig
	Hooks      hooks.Config
	// HooksAutoAccept is hooks_auto_accept.
	HooksAutoAccept bool
	// Sandbox is the policy of the local backend's sandbox (Mode
	// full-access: none); SandboxEnv the variables sandbox.env adds.
	Sandbox    sandbox.Policy
	SandboxEnv []string
	// Speech is stt:, tts: and voice:; ImageGen is image_gen:.
	Speech   Speech
	ImageGen ImageGen
	// Review is the background review; ReviewAux and ReviewModel its
	// model (ReviewModel "": the auxiliary model, else the main one).
	Review      Review
	ReviewAux   llm.Config
	ReviewModel string
}

// Overrides are the flags of `hermes chat`.
type Overrides struct {
	Model, Provider, BaseURL, APIMode string
	MaxTurns                          int
	Yolo                              bool
	// Sandbox is --sandbox: a mode over sandbox.mode.
	Sandbox string
}

// Load reads home's config.yaml (none: the zero Config), refusing unknown
// keys and values out of range with errors naming the key and its line.
func Load(home string) (Config, error) {
	var c Config
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	return parse(path, data)
}

// Live is a home's config.yaml as it is now, for a long-running process
// that reads it per session: parsed again only when its bytes changed
// (YAML and the key checks cost more than the read). The zero Live is
// ready.
type Live struct {
	mu   sync.Mutex
	data []byte
	cfg  Config
}

// Load is Load(home). The Config shares its maps and slices with what
// later calls return: read it, do not change it.
func (l *Live) Load(home string) (Config, error) {
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.data != nil && bytes.Equal(data, l.data) {
		return l.cfg, nil
	}
	c, err := parse(path, data)
	if err != nil {
		return c, err
	}
	l.data, l.cfg = data, c
	return c, nil
}

// parse is the configuration in data, read from path.
func parse(path string, data []byte) (Config, error) {
	var c Config
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	keys := checkKeys(&doc)
	if len(keys.problems) > 0 {
		var lines []string
		for _, p := range keys.problems {
			lines = append(lines, fmt.Sprintf("line %d: %s", p.line, p.msg))
		}
		return c, fmt.Errorf("%s:\n  %s", path, strings.Join(lines, "\n  "))
	}
	if len(doc.Content) > 0 {
		if err := doc.Decode(&c); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
	}
	var used []string
	if len(doc.Content) > 0 {
		var err error
		if used, err = c.honourPython(&doc); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
	}
	if bad := checkValues(c, keys.set); len(bad) > 0 {
		return c, fmt.Errorf("%s:\n  %s", path, strings.Join(bad, "\n  "))
	}
	c.ignored = dropUsed(keys.ignored, used)
	return c, nil
}

// Resolve is the configuration in effect: o (the flags) over the
// environment over c (the file) over the defaults.
func Resolve(home string, c Config, o Overrides) (Resolved, error) {
	path := filepath.Join(home, "config.yaml")
	r := Resolved{Model: c.Model.Name, MaxTurns: 90, BudgetWarningAt: 0.7, ToolTimeout: 180 * time.Second, MaxParallel: 8, Yolo: o.Yolo}
	r.LLM = llm.Config{Provider: first(c.Model.Provider, c.Provider), BaseURL: first(c.Model.BaseURL, c.BaseURL),
		APIMode: first(c.Model.APIMode, c.APIMode), APIKey: c.APIKey}
	if v := os.Getenv("HERMES_MODEL"); v != "" {
		r.Model = v
	}
	// Flags first for provider and mode, so the environment variables read
	// below are the ones of the API that will be spoken.
	r.LLM.Provider = first(o.Provider, r.LLM.Provider)
	r.LLM.APIMode = first(o.APIMode, r.LLM.APIMode)
	known, isKnown := catalog.Lookup(r.LLM.Provider)
	if r.LLM.Provider != "" && !isKnown && !llm.IsPlugin(r.LLM.Provider) {
		src := "--provider"
		if o.Provider == "" {
			src = path + ": model.provider"
		}
		return r, catalog.UnknownError(src, r.LLM.Provider)
	}
	if isKnown {
		r.LLM.Provider = known.ID
	}
	// A Claude model with no provider and no server named is Anthropic's.
	if model := strings.ToLower(first(o.Model, r.Model)); r.LLM.Provider == "" && r.LLM.BaseURL == "" && o.BaseURL == "" &&
		os.Getenv("OPENAI_BASE_URL") == "" && strings.HasPrefix(model, "claude") {
		r.LLM.Provider = "anthropic"
		known, isKnown = catalog.Lookup("anthropic")
	}
	mode, err := llm.ResolveMode(r.LLM)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	keyEnvs, urlEnv := []string{"OPENAI_API_KEY"}, "OPENAI_BASE_URL"
	switch mode {
	case model.ModeAnthropic:
		keyEnvs, urlEnv = []string{"ANTHROPIC_API_KEY"}, "ANTHROPIC_BASE_URL"
	case model.ModeGemini:
		g, _ := catalog.Lookup("gemini")
		keyEnvs, urlEnv = g.KeyEnv, ""
	}
	if isKnown {
		keyEnvs, urlEnv = known.KeyEnv, known.BaseURLEnv
	}
	if v := os.Getenv(urlEnv); urlEnv != "" && v != "" {
		r.LLM.BaseURL = v
	}
	if r.LLM.BaseURL == "" && isKnown {
		r.LLM.BaseURL = known.BaseURL
	}
	r.LLM.KeyEnv = ""
	for _, e := range keyEnvs {
		if v := os.Getenv(e); v != "" {
			r.LLM.APIKey, r.LLM.KeyEnv = v, e
			break
		}
	}
	if r.LLM.KeyEnv == "" && len(keyEnvs) > 0 {
		r.LLM.KeyEnv = keyEnvs[0]
	}
	if r.LLM.APIKey == "" && isKnown {
		r.LLM.APIKey = authPoolKey(home, known.ID) // the Python agent's auth.json
	}
	r.Model = first(o.Model, r.Model)
	r.LLM.BaseURL = first(o.BaseURL, r.LLM.BaseURL)
	if r.Mode, err = llm.ResolveMode(r.LLM); err != nil {
		return r, err
	}
	if isKnown && known.NeedsBaseURL && known.ID != "custom" && r.LLM.BaseURL == "" {
		return r, fmt.Errorf("provider %s has no default endpoint: set %s, model.base_url in %s, or pass --base-url", known.ID, known.BaseURLEnv, path)
	}
	if r.Model == "" {
		return r, fmt.Errorf("no model configured: set model in %s, set HERMES_MODEL, or pass --model", path)
	}
	if c.Agent.MaxTurns > 0 {
		r.MaxTurns = c.Agent.MaxTurns
	}
	if o.MaxTurns < 0 {
		return r, fmt.Errorf("--max-turns must be positive, got %d", o.MaxTurns)
	}
	if o.MaxTurns > 0 {
		r.MaxTurns = o.MaxTurns
	}
	if w := c.Agent.BudgetWarningAt; w != nil {
		if *w < 0 || *w > 1 {
			return r, fmt.Errorf("%s: agent.budget_warning_at must be between 0 and 1 (0 turns warnings off), got %g", path, *w)
		}
		r.BudgetWarningAt = *w
	}
	if c.Agent.ToolTimeout != "" {
		d, err := time.ParseDuration(c.Agent.ToolTimeout)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("%s: agent.tool_timeout %q: use a duration such as 180s", path, c.Agent.ToolTimeout)
		}
		r.ToolTimeout = d
	}
	if c.Agent.ModelCallTimeout != "" {
		d, err := time.ParseDuration(c.Agent.ModelCallTimeout)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("%s: agent.model_call_timeout %q: use a duration such as 10m", path, c.Agent.ModelCallTimeout)
		}
		r.LLM.CallTimeout = d
	}
	if d, err := firstByteTimeout(c.Agent.FirstByteTimeout, path); err != nil {
		return r, err
	} else if d != 0 {
		r.LLM.FirstByteTimeout = d
	}
	if c.Agent.MaxParallelTools > 0 {
		r.MaxParallel = c.Agent.MaxParallelTools
	}
	r.MaxTokens = c.Agent.MaxTokens
	if err := c.Tools.Validate(); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.Tools, r.AllowList, r.Web = c.Tools, c.CommandAllowlist, c.Web
	r.TerminalTimeout, r.ApprovalTimeout = 180*time.Second, 60*time.Second
	if v, ok := c.Terminal["timeout"]; ok {
		secs, ok := v.(int)
		if !ok || secs <= 0 {
			return r, fmt.Errorf("%s: terminal.timeout must be a positive number of seconds, got %v", path, v)
		}
		r.TerminalTimeout = time.Duration(secs) * time.Second
	}
	if r.Backend, err = backendOf(c.Terminal, path); err != nil {
		return r, err
	}
	if v := c.Terminal["env_passthrough"]; v != nil {
		list, ok := v.([]any)
		for _, x := range list {
			name, _ := x.(string)
			if _, err := filepath.Match(name, ""); name == "" || err != nil {
				ok = false
			}
			r.EnvPassthrough = append(r.EnvPassthrough, name)
		}
		if !ok {
			return r, fmt.Errorf("%s: terminal.env_passthrough must be a list of variable names (or patterns such as GH_*), got %v", path, v)
		}
	}
	for i, f := range c.FallbackProviders {
		fc := llm.Config{Provider: f.Provider, BaseURL: f.BaseURL, APIMode: f.APIMode, CallTimeout: r.LLM.CallTimeout, FirstByteTimeout: r.LLM.FirstByteTimeout}
		mode, err := llm.ResolveMode(fc)
		if err != nil {
			return r, fmt.Errorf("%s: fallback_providers[%d]: %w", path, i, err)
		}
		if f.Name == "" {
			return r, fmt.Errorf("%s: fallback_providers[%d] names no model", path, i)
		}
		fc.KeyEnv = "OPENAI_API_KEY"
		if mode == model.ModeAnthropic {
			fc.KeyEnv = "ANTHROPIC_API_KEY"
		}
		if k, ok := catalog.Lookup(f.Provider); ok {
			fc.Provider = k.ID
			if fc.BaseURL == "" {
				fc.BaseURL = k.BaseURL
			}
			for i, e := range k.KeyEnv {
				if i == 0 || os.Getenv(e) != "" {
					fc.KeyEnv = e
				}
				if os.Getenv(e) != "" {
					break
				}
			}
		}
		if f.APIKeyEnv != "" {
			fc.KeyEnv = f.APIKeyEnv
		}
		fc.APIKey = os.Getenv(fc.KeyEnv)
		r.Fallbacks, r.FallbackModels = append(r.Fallbacks, fc), append(r.FallbackModels, f.Name)
	}
	cc := c.Compression
	r.Compression = compress.Config{Enabled: cc.Enabled == nil || *cc.Enabled, Threshold: cc.Threshold, TargetRatio: cc.TargetRatio,
		ProtectFirstN: cc.ProtectFirstN, ProtectLastN: cc.ProtectLastN}
	if aux := c.Auxiliary.Compression; aux.Name != "" || aux.Provider != "" || aux.BaseURL != "" {
		r.Aux = llm.Config{Provider: first(aux.Provider, r.LLM.Provider), BaseURL: first(aux.BaseURL, r.LLM.BaseURL), APIMode: aux.APIMode, APIKey: r.LLM.APIKey, CallTimeout: r.LLM.CallTimeout,
			FirstByteTimeout: r.LLM.FirstByteTimeout}
		r.AuxModel = first(aux.Name, r.Model)
	}
	if v := c.Auxiliary.Vision; v.Name != "" || v.Provider != "" || v.BaseURL != "" {
		r.VisionAux = llm.Config{Provider: first(v.Provider, r.LLM.Provider), BaseURL: first(v.BaseURL, r.LLM.BaseURL), APIMode: v.APIMode, APIKey: r.LLM.APIKey, CallTimeout: r.LLM.CallTimeout,
			FirstByteTimeout: r.LLM.FirstByteTimeout}
		if v.Provider != "" && v.Provider != r.LLM.Provider {
			if k, ok := catalog.Lookup(v.Provider); ok {
				r.VisionAux.Provider, r.VisionAux.APIKey = k.ID, ""
				if v.BaseURL == "" {
					r.VisionAux.BaseURL = k.BaseURL
				}
				for _, e := range k.KeyEnv {
					if r.VisionAux.APIKey = os.Getenv(e); r.VisionAux.APIKey != "" {
						break
					}
				}
			}
		}
		r.VisionModel = first(v.Name, r.Model)
	}
	r.Review = c.review()
	if v := c.Auxiliary.BackgroundReview.ModelRef; v.Provider != "auto" && (v.Name != "" || v.Provider != "" || v.BaseURL != "") {
		r.ReviewAux = llm.Config{Provider: first(v.Provider, r.LLM.Provider), BaseURL: first(v.BaseURL, r.LLM.BaseURL), APIMode: v.APIMode, APIKey: r.LLM.APIKey, CallTimeout: r.LLM.CallTimeout,
			FirstByteTimeout: r.LLM.FirstByteTimeout}
		if k, ok := catalog.Lookup(v.Provider); ok && v.Provider != r.LLM.Provider {
			// Another provider: its address and its key, not the main one's.
			r.ReviewAux.Provider, r.ReviewAux.APIKey = k.ID, ""
			if v.BaseURL == "" {
				r.ReviewAux.BaseURL = k.BaseURL
			}
			for _, e := range k.KeyEnv {
				if r.ReviewAux.APIKey = os.Getenv(e); r.ReviewAux.APIKey != "" {
					break
				}
			}
		}
		r.ReviewModel = first(v.Name, r.Model)
	}
	r.Vision = c.supportsVision
	r.AutoTitle = c.Auxiliary.TitleGeneration.Enabled == nil || *c.Auxiliary.TitleGeneration.Enabled
	r.ContextWindow = c.ContextWindow
	d := c.Delegation
	r.MaxDepth, r.MaxConcurrent, r.MaxDelegates = d.MaxDepth, d.MaxConcurrent, d.MaxPerResponse
	r.MaxCostPerSession, r.MaxCostPerDay = c.Budget.MaxCostPerSession, c.Budget.MaxCostPerDay
	if v := c.Sessions.IdleAfter; v == "never" {
		r.IdleAfter = -1
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("%s: sessions.idle_after %q: use a duration such as 10m, or never", path, v)
		}
		r.IdleAfter = d
	}
	if v := os.Getenv("HERMES_BACKOFF_BASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return r, fmt.Errorf("HERMES_BACKOFF_BASE %q: use a duration such as 5s", v)
		}
		r.BackoffBase = d
	}
	for name, sc := range c.MCPServers {
		if err := sc.Validate(name); err != nil {
			return r, fmt.Errorf("%s: %w", path, err)
		}
	}
	if _, err := c.Hooks.Validate(); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.MCPServers, r.Hooks, r.HooksAutoAccept = c.MCPServers, c.Hooks, c.HooksAutoAccept
	sbMode := o.Sandbox
	if sbMode == "" {
		sbMode = os.Getenv("HERMES_SANDBOX")
	}
	if r.Sandbox, err = SandboxPolicy(home, c.Sandbox, sbMode, path); err != nil {
		return r, err
	}
	r.SandboxEnv = c.Sandbox.Env
	r.Speech = resolveSpeech(c)
	r.ImageGen = resolveImageGen(c.ImageGen)
	r.Prices = model.DefaultPrices()
	for k, v := range catalog.Prices() {
		if _, ok := r.Prices[k]; !ok {
			r.Prices[k] = v
		}
	}
	for k, v := range c.Prices {
		r.Prices[k] = v
	}
	return r, nil
}

// backendOf reads Hermes' terminal.backend keys.
func backendOf(t map[string]any, path string) (terminal.Backend, error) {
	str := func(k string) string { v, _ := t[k].(string); return v }
	switch b := str("backend"); b {
	case "", "local":
		return terminal.Local{}, nil
	case "ssh":
		if str("ssh_host") == "" {
			return nil, fmt.Errorf("%s: terminal.backend is ssh but terminal.ssh_host is not set", path)
		}
		port, _ := t["ssh_port"].(int)
		return terminal.SSH{Host: str("ssh_host"), User: str("ssh_user"), Port: port, KeyFile: str("ssh_key"), Dir: str("cwd")}, nil
	case "docker":
		img := str("docker_image")
		if img == "" {
			img = "python:3.11-slim"
		}
		return &terminal.Docker{Image: img, Container: fmt.Sprintf("hermes-%d", time.Now().UnixNano())}, nil
	default:
		return nil, fmt.Errorf("%s: terminal.backend %q: use local, ssh or docker", path, b)
	}
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// SandboxPolicy is the sandbox policy of config's sandbox: section (mode
// over it: --sandbox, else HERMES_SANDBOX): Hermes' home and the credential stores hidden,
// the home's start-up files protected, and what the section adds.
func SandboxPolicy(home string, c SandboxConfig, mode, path string) (sandbox.Policy, error) {
	m, err := sandbox.ParseMode(first(mode, c.Mode))
	if err != nil {
		if mode != "" {
			return sandbox.Policy{}, fmt.Errorf("--sandbox (or HERMES_SANDBOX): %w", err)
		}
		return sandbox.Policy{}, fmt.Errorf("%s: sandbox.mode: %w", path, err)
	}
	userHome, _ := os.UserHomeDir()
	abs, err := filepath.Abs(home)
	if err != nil {
		return sandbox.Policy{}, err
	}
	p := sandbox.Defaults(userHome, abs)
	p.Mode = m
	if p.Network, err = sandbox.ParseNet(c.Network, c.NetworkAllow); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	p.Allow = c.NetworkAllow
	for _, w := range c.WritableRoots {
		w = expandHome(w, userHome)
		if !filepath.IsAbs(w) {
			return p, fmt.Errorf("%s: sandbox.writable_roots: %q is not an absolute path", path, w)
		}
		p.Writable = append(p.Writable, w)
	}
	for _, v := range c.Readable {
		v = expandHome(v, userHome)
		if !filepath.IsAbs(v) {
			return p, fmt.Errorf("%s: sandbox.readable: %q is not an absolute path", path, v)
		}
		if within(v, abs) {
			return p, fmt.Errorf("%s: sandbox.readable: %s is inside Hermes' home, which commands never see", path, v)
		}
		p.Hidden = slices.DeleteFunc(p.Hidden, func(h string) bool { return h == v })
		p.Visible = append(p.Visible, v)
	}
	if c.MaxProcesses < 0 || c.MaxMemoryMB < 0 {
		return p, fmt.Errorf("%s: sandbox.max_processes and sandbox.max_memory_mb must be positive (0: the default)", path)
	}
	p.Limits = sandbox.Limits{Procs: c.MaxProcesses, Memory: int64(c.MaxMemoryMB) << 20}
	return p, nil
}

func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// within reports whether p is dir or beneath it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// firstByteTimeout reads agent.first_byte_timeout, or
// HERMES_FIRST_BYTE_TIMEOUT over it: whole seconds or a duration, 0 for
// none (returned as a negative duration: the adapters' "disabled"); zero
// when neither is set (the default).
func firstByteTimeout(v, path string) (time.Duration, error) {
	src := path + ": agent.first_byte_timeout"
	if env := os.Getenv("HERMES_FIRST_BYTE_TIMEOUT"); env != "" {
		v, src = env, "HERMES_FIRST_BYTE_TIMEOUT"
	}
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if secs, serr := strconv.ParseFloat(v, 64); serr == nil {
		d, err = time.Duration(secs*float64(time.Second)), nil
	}
	switch {
	case err != nil || d < 0:
		return 0, fmt.Errorf("%s %q: use seconds such as 120, a duration such as 2m, or 0 for no limit", src, v)
	case d == 0:
		return -1, nil
	}
	return d, nil
}
