package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/web"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// toolsListCmd is `hermes tools list`.
func toolsListCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every tool with its toolset and whether config enables it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			fileCfg, err := config.Load(home)
			if err != nil {
				return err
			}
			if err := fileCfg.Tools.Validate(); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(home, "config.yaml"), err)
			}
			cfg := config.Resolved{TerminalTimeout: 3 * time.Minute, Web: fileCfg.Web, MCPServers: fileCfg.MCPServers, Hooks: fileCfg.Hooks}
			wd, _ := os.Getwd()
			r, _, err := registry(home, wd, nil, cfg, nil, nil, nil, g.Log)
			if err != nil {
				return err
			}
			defer r.Close()
			r.Wait() // the tools of MCP servers that connect within their connect_timeout
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
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
				fmt.Fprintln(cmd.OutOrStdout(), "\n"+web.HowToEnable)
			}
			return nil
		},
	}
}
