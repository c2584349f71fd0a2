package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/browser"
	"github.com/hermes-go/hermes/adapters/tools/web"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// toolsListOptions are the flags and arguments of `hermes tools list`.
type toolsListOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// toolsListCmd is `hermes tools list`.
func toolsListCmd(g *app.Factory) *cobra.Command {
	opts := &toolsListOptions{app: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every tool with its toolset and whether config enables it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runToolsList(cmd.Context(), opts)
		},
	}
	return cmd
}

// runToolsList runs `hermes tools list`.
func runToolsList(ctx context.Context, opts *toolsListOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	fileCfg, err := opts.app.Config()
	if err != nil {
		return err
	}
	if err := fileCfg.Tools.Validate(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(home, "config.yaml"), err)
	}
	cfg := config.Resolved{TerminalTimeout: 3 * time.Minute, Web: fileCfg.Web, MCPServers: fileCfg.MCPServers, Hooks: fileCfg.Hooks}
	wd, _ := os.Getwd()
	r, _, err := app.Registry(home, wd, nil, cfg, nil, nil, nil, nil, opts.app.Log)
	if err != nil {
		return err
	}
	defer r.Close()
	r.Wait() // the tools of MCP servers that connect within their connect_timeout
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOLSET\tTOOL\tENABLED\tDESCRIPTION")
	enabled := r.On(fileCfg.Tools)
	for _, e := range r.All() {
		on := "yes"
		if !enabled[e.Tool.Spec().Name] {
			on = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Toolset, e.Tool.Spec().Name, on, clip(e.Tool.Spec().Description, 70))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fileCfg.Web.SearchURL == "" {
		fmt.Fprintln(opts.io.Out, "\n"+web.HowToEnable)
	}
	if _, err := browser.FindChromium(""); err != nil {
		fmt.Fprintln(opts.io.Out, "\n"+err.Error())
	}
	return nil
}
