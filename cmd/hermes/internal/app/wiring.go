package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/adapters/secrets"
	"github.com/hermes-go/hermes/adapters/tools"
	"github.com/hermes-go/hermes/adapters/tools/sessionsearch"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// What the chat, the gateway, cron, the cluster node and the MCP server
// build alike from the resolved configuration: the provider ladder, the
// auxiliary summarizer, the secrets, the skills library, subagents'
// toolboxes, MCP servers and shell hooks.

// Summarizer condenses long session_search results with the auxiliary
// model (the main one unless auxiliary.compression names another).
func Summarizer(main model.Provider, cfg config.Resolved) func(context.Context, string, string) (string, error) {
	return func(ctx context.Context, query, results string) (string, error) {
		prov, name := main, cfg.Model
		if cfg.AuxModel != "" {
			p, err := llm.New(cfg.Aux)
			if err != nil {
				return "", err
			}
			prov, name = p, cfg.AuxModel
		}
		resp, err := prov.Complete(ctx, model.Request{Model: name, System: sessionsearch.SummaryPrompt, NoTools: true, MaxTokens: 1500,
			Messages: []schema.Message{{Role: "user", Content: "Query: " + query + "\n\nResults:\n" + results}}}, func(model.Delta) {})
		if err != nil {
			return "", err
		}
		// the call is the session's: recorded so that costs count it
		if env := tool.EnvFrom(ctx); env != nil && env.Record != nil {
			if err := env.Record(ctx, model.AuxCall("search_summary", prov, name, resp, cfg.Prices)); err != nil {
				return "", err
			}
		}
		return resp.Content, nil
	}
}

// Ladder builds the provider chain: the configured provider, then
// fallback_providers in order, each with its credential pool.
func Ladder(cfg config.Resolved) (model.Provider, error) { return LadderWith(cfg, nil) }

// LadderWith is Ladder where plugins may serve providers (provider:
// plugin:NAME): host returns the plugins of the process once they are
// started, which may be after the ladder is built.
func LadderWith(cfg config.Resolved, host func() *plugins.Host) (model.Provider, error) {
	var eps []*model.Endpoint
	for i, c := range append([]llm.Config{cfg.LLM}, cfg.Fallbacks...) {
		c := c
		if name, ok := strings.CutPrefix(c.Provider, plugins.ProviderPrefix); ok && llm.IsPlugin(c.Provider) {
			if host == nil {
				return nil, fmt.Errorf("provider %s is a plugin's, and this command runs no plugins", c.Provider)
			}
			p := plugins.Late(name, host)
			ep := &model.Endpoint{Name: c.Provider, Build: func(string) model.Provider { return p }, Keys: []string{""}}
			if i > 0 {
				ep.Model = cfg.FallbackModels[i-1]
			}
			eps = append(eps, ep)
			continue
		}
		if _, err := llm.New(c); err != nil {
			return nil, err
		}
		name := c.Provider
		if name == "" {
			name = "openai"
			if m, _ := llm.ResolveMode(c); m == model.ModeAnthropic {
				name = "anthropic"
			}
		}
		ep := &model.Endpoint{Name: name, Build: func(key string) model.Provider {
			cc := c
			cc.APIKey = key
			p, _ := llm.New(cc)
			return p
		}}
		if i > 0 {
			ep.Model = cfg.FallbackModels[i-1]
		}
		ep.Keys = keysOf(c.APIKey)
		envName := c.KeyEnv
		ep.Refresh = func() string {
			if envName == "" {
				return ""
			}
			if v := os.Getenv(envName); v != "" && !slices.Contains(ep.Keys, v) {
				return v
			}
			return ""
		}
		eps = append(eps, ep)
	}
	return &model.Ladder{Endpoints: eps, Backoff: model.Backoff{Base: cfg.BackoffBase}}, nil
}

// keysOf splits a comma-separated credential pool.
func keysOf(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// Secrets is what this process knows to be secret: its environment's
// keys and the keys config holds outside the environment.
func Secrets(cfg config.Resolved) *secrets.Set {
	keys := map[string]string{"api_key (config.yaml)": cfg.LLM.APIKey, "web.api_key (config.yaml)": cfg.Web.APIKey}
	for i, f := range cfg.Fallbacks {
		keys[fmt.Sprintf("fallback_providers[%d] key", i)] = f.APIKey
	}
	for name, sc := range cfg.MCPServers {
		for k, v := range sc.Secrets(name) {
			keys[k+" (config.yaml)"] = v
		}
	}
	return secrets.New(os.Environ(), cfg.EnvPassthrough, keys)
}

// Library is the project's skills, then the user's.
func Library(home, wd string) skills.Library {
	dirs := append([]string(nil), skillsOverlay...)
	return skills.Library{Dirs: append(dirs, filepath.Join(wd, ".hermes", "skills"), filepath.Join(home, "skills"))}
}

// skillsOverlay are directories searched before the others by every
// library this process builds (OverlaySkills).
var skillsOverlay []string

// OverlaySkills makes every skills library this process builds from now
// on search dirs first: `hermes skills try` runs its forks with a skill's
// candidate version, the home's library untouched. The home stays the
// last directory, where skill_manage writes.
func OverlaySkills(dirs ...string) { skillsOverlay = append([]string(nil), dirs...) }

// KeptLibrary is Library with the home's skills kept as events in store
// (none when store is nil: the files alone).
func KeptLibrary(home, wd string, store events.Store) skills.Library {
	l := Library(home, wd)
	if store != nil {
		l.Keeper = skills.NewKeeper(store, filepath.Join(home, "skills"))
	}
	return l
}

// Restrictor returns the toolbox of a subagent: the session's selection,
// narrowed to the toolsets it asked for, without delegate_task past the
// depth limit.
func Restrictor(r *tools.Registry, sel tools.Selection) func([]string, bool) tool.Toolbox {
	return func(toolsets []string, canDelegate bool) tool.Toolbox {
		s := sel
		if len(toolsets) > 0 {
			s.Toolsets = append([]string(nil), toolsets...)
			s.EnabledTools = nil
		}
		if !canDelegate {
			s.DisabledToolsets = append(append([]string(nil), s.DisabledToolsets...), "delegation")
		}
		return r.Select(sel, s)
	}
}

// MCPOptions are the MCP servers' options in this process: the
// environment without Hermes' secrets, the dialects of the providers in
// use, the cache for images, command_allowlist for approvals.
func MCPOptions(home string, cfg config.Resolved, env func() []string, allow mcp.AllowList, wrap func(tool.Tool) tool.Tool, log zerolog.Logger) *mcp.Options {
	modes := []string{cfg.Mode}
	for _, f := range cfg.Fallbacks {
		if m, err := llm.ResolveMode(f); err == nil {
			modes = append(modes, m)
		}
	}
	return &mcp.Options{Env: env, Dialects: mcp.DialectsOf(modes...), Wrap: wrap, Allow: allow, ApprovalTimeout: cfg.ApprovalTimeout,
		CacheDir: filepath.Join(home, "cache", "mcp"), Log: log, Version: Version()}
}

// AddMCP adds a toolset per enabled MCP server to r and starts them all
// connecting at once, in the background. Registry.Close stops them.
func AddMCP(r *tools.Registry, home string, cfg config.Resolved, env func() []string, allow mcp.AllowList, wrap func(tool.Tool) tool.Tool, log zerolog.Logger) error {
	if len(cfg.MCPServers) == 0 {
		return nil
	}
	m, err := mcp.NewManager(cfg.MCPServers, MCPOptions(home, cfg, env, allow, wrap, log))
	if err != nil {
		return err
	}
	for _, s := range m.Servers() {
		if unused := s.Config().Unused(); len(unused) > 0 {
			log.Warn().Str("mcp_server", s.Name()).Strs("keys", unused).Msg("mcp_servers: this build of hermes ignores these keys")
		}
		if err := r.AddSource(mcp.Toolset(s.Name()), s); err != nil {
			m.Close()
			return err
		}
	}
	m.Start()
	return nil
}

// Hooks is the hook runner of a chat or gateway: the shell hooks of
// config.yaml their person allowed. A new hook command is asked about
// once on the terminal and remembered in $HERMES_HOME (see
// hooks.Consent); without a terminal it is refused unless --accept-hooks,
// HERMES_ACCEPT_HOOKS=1 or hooks_auto_accept: true allows it.
func Hooks(g *Factory, home, wd string, cfg config.Resolved) (*hooks.Runner, error) {
	consent := g.HookConsent
	if consent == nil {
		consent = hookConsent(g, home, cfg.HooksAutoAccept)
	}
	return hooks.New(cfg.Hooks, hooks.Options{Env: func() []string { return Secrets(cfg).Env(os.Environ()) }, Dir: wd, Log: g.Log, Consent: consent, Platform: "cli"})
}

func hookConsent(g *Factory, home string, autoAccept bool) *hooks.Consent {
	consent := &hooks.Consent{Path: filepath.Join(home, hooks.AllowlistFile), Accept: g.AcceptHooks || autoAccept || envTrue("HERMES_ACCEPT_HOOKS")}
	if f, ok := g.IO.In.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		consent.In, consent.Out = f, g.errOut()
	}
	return consent
}

// AskHooksFirst asks about the configured hooks not allowed yet now, on
// the terminal, before something else (the chat screen) takes it; the
// answers are the chat's, and nothing asks again.
func AskHooksFirst(g *Factory, home string, c config.Config) {
	consent := hookConsent(g, home, c.HooksAutoAccept)
	for _, e := range hooks.Events {
		if ok, _ := hooks.Fired(e); !ok {
			continue
		}
		for _, h := range c.Hooks[e] {
			consent.Allow(e, h.Command)
		}
	}
	consent.In, consent.Out = nil, nil
	g.HookConsent = consent
}

func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// TurnHooks are the hooks of r that run at turns, model requests and
// subagents (nil: none).
func TurnHooks(r *hooks.Runner) agent.TurnHooks {
	for _, e := range []string{hooks.PreLLMCall, hooks.PostLLMCall, hooks.OnSessionStart, hooks.OnSessionEnd, hooks.TransformLLMOutput,
		hooks.PreAPIRequest, hooks.PostAPIRequest, hooks.APIRequestError, hooks.SubagentStart, hooks.SubagentStop} {
		if r.Has(e) {
			return r
		}
	}
	return nil
}

// Version is this build's module version (dev when built from a checkout).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
