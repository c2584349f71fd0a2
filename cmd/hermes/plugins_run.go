package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// pluginsRunOptions are the arguments of `hermes plugins run`.
type pluginsRunOptions struct {
	app             *app.Factory
	io              app.IOStreams
	plugin, command string
	args            []string
}

func pluginsRunCmd(g *app.Factory) *cobra.Command {
	opts := &pluginsRunOptions{app: g}
	return &cobra.Command{
		Use: "run PLUGIN COMMAND [ARGS...]", Short: "Run a CLI command a plugin registers (hermes plugins list shows them)", Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.plugin, opts.command, opts.args = ioOf(cmd), args[0], args[1], args[2:]
			return runPluginsRun(cmd.Context(), opts)
		},
	}
}

// runPluginsRun runs `hermes plugins run`: it starts the plugin alone,
// calls its command and prints what it answered.
func runPluginsRun(ctx context.Context, opts *pluginsRunOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	fileCfg, err := config.Load(a.Home)
	if err != nil {
		return err
	}
	cfg, err := config.Resolve(a.Home, fileCfg, config.Overrides{Model: first(fileCfg.Model.Name, "unset")})
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	h, err := app.StartPlugins(ctx, a.Home, wd, a.Store, cfg, nil, opts.plugin, opts.app.Log)
	if err != nil {
		return err
	}
	defer h.Close()
	out, err := h.Run(ctx, opts.plugin, opts.command, opts.args)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.io.Out, out)
	return nil
}

// pluginsExecCmd is the launcher the MCP client starts for each plugin:
// it runs the plugin of $HERMES_PLUGIN_SPEC in its sandbox, its stdio
// relayed. Hidden: hermes starts it, people do not.
func pluginsExecCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use: "exec", Hidden: true, Short: "Run a plugin in its sandbox (started by hermes itself)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := plugins.ReadSpec()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// The process's own descriptors: the plugin is handed them
			// (no copy on the way), stderr stays the client's.
			code, err := plugins.Exec(ctx, spec, os.Stdin, os.Stdout, ioOf(cmd).ErrOut, g.Log)
			if err != nil {
				return err
			}
			if code != 0 {
				return &exitError{code: code, err: fmt.Errorf("plugin %s exited %d", spec.Name, code)}
			}
			return nil
		},
	}
}
