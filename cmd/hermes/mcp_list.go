package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// mcpListOptions are the flags and arguments of `hermes mcp list`.
type mcpListOptions struct {
	app               *app.Factory
	io                app.IOStreams
	asJSON, noConnect bool
}

func mcpListCmd(g *app.Factory) *cobra.Command {
	opts := &mcpListOptions{app: g}
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers of config.yaml, connecting to each to show its state, tools and last error", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runMCPList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.noConnect, "no-connect", false, "only what config says, without connecting")
	return cmd
}

// runMCPList runs `hermes mcp list`.
func runMCPList(ctx context.Context, opts *mcpListOptions) error {
	home, cfg, err := mcpConfig(opts.app)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	rows, _, closeAll, err := probe(home, cfg, names, !opts.noConnect, zerolog.Nop()) // failures are in the table
	if err != nil {
		return err
	}
	defer closeAll()
	out := opts.io.Out
	if opts.asJSON {
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
}
