package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func mcpListCmd(g *app.Factory) *cobra.Command {
	var asJSON, noConnect bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers of config.yaml, connecting to each to show its state, tools and last error", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, cfg, err := mcpConfig(g)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(cfg.MCPServers))
			for n := range cfg.MCPServers {
				names = append(names, n)
			}
			sort.Strings(names)
			rows, _, closeAll, err := probe(home, cfg, names, !noConnect, zerolog.Nop()) // failures are in the table
			if err != nil {
				return err
			}
			defer closeAll()
			out := cmd.OutOrStdout()
			if asJSON {
				if rows == nil {
					rows = []mcpRow{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(out, "no MCP servers yet; add one: hermes mcp add NAME -- COMMAND ARGS... or hermes mcp add NAME --url URL")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTRANSPORT\tTARGET\tSTATE\tTOOLS\tHANDSHAKE\tERROR")
			for _, r := range rows {
				state := r.State
				if r.Approval {
					state += " (approval)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Name, r.Transport, clip(r.Target, 50), state, r.Tools, r.Handshake, clip(r.Error, 120))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noConnect, "no-connect", false, "only what config says, without connecting")
	return cmd
}
