package app

import (
	"context"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
)

// PluginBook is the home's plugins: files in $HERMES_HOME/plugins, events
// in store.
func PluginBook(home string, store events.Store) *plugins.Book {
	return &plugins.Book{Store: store, Dir: filepath.Join(home, "plugins")}
}

// PluginPolicy is the sandbox plugins run in, narrowed per plugin: the
// terminal's policy (whatever the terminal backend, plugins run on this
// machine); nil when sandbox.mode is full-access.
func PluginPolicy(home string, cfg config.Resolved, log zerolog.Logger) *sandbox.Policy {
	p := cfg.Sandbox
	if p.Mode == "" {
		var err error
		if p, err = config.SandboxPolicy(home, config.SandboxConfig{}, "", "config.yaml"); err != nil {
			p = sandbox.Defaults("", home)
		}
	}
	if p.Mode == sandbox.FullAccess {
		log.Warn().Msg("sandbox.mode is full-access: plugins run unconfined")
		return nil
	}
	return &p
}

// StartPlugins starts the enabled plugins of the home; their hooks join
// hk. Close the host when Hermes exits.
// only, when set, starts that plugin alone.
func StartPlugins(ctx context.Context, home, wd string, store events.Store, cfg config.Resolved, hk *hooks.Runner, only string, log zerolog.Logger) (*plugins.Host, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h, err := plugins.Start(ctx, PluginBook(home, store), plugins.Options{WD: wd, Exe: exe, Policy: PluginPolicy(home, cfg, log),
		MCP: *MCPOptions(home, cfg, nil, nil, nil, log), Log: log, Only: only})
	if err != nil {
		return nil, err
	}
	if hk == nil {
		return h, nil
	}
	if err := h.RegisterHooks(hk); err != nil {
		log.Warn().Err(err).Msg("plugin hooks")
	}
	return h, nil
}

// AddPlugins adds each running plugin's tools to r as a toolset
// (plugin-<name>), redacted and hooked as every tool is.
func AddPlugins(r *tools.Registry, h *plugins.Host, cfg config.Resolved, hk *hooks.Runner) error {
	keep := Secrets(cfg)
	wrap := func(t tool.Tool) tool.Tool { return hk.Tool(keep.Tools(t)[0]) }
	for name, src := range h.Toolsets(wrap) {
		if err := r.AddSource(name, src); err != nil {
			return err
		}
	}
	return nil
}
