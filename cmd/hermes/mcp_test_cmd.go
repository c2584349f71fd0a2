package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// mcpTestOptions are the flags and arguments of `hermes mcp test`.
type mcpTestOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

func mcpTestCmd(g *app.Factory) *cobra.Command {
	opts := &mcpTestOptions{app: g}
	cmd := &cobra.Command{
		Use: "test NAME", Short: "Connect to an MCP server, time the handshake and list its tools as the model sees them", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runMCPTest(cmd.Context(), opts)
		},
	}
	return cmd
}

// runMCPTest runs `hermes mcp test`.
func runMCPTest(ctx context.Context, opts *mcpTestOptions) error {
	home, cfg, err := mcpConfig(opts.app)
	if err != nil {
		return err
	}
	name := opts.name
	sc, ok := cfg.MCPServers[name]
	if !ok {
		return fmt.Errorf("no MCP server %s in %s; hermes mcp list shows them", name, filepath.Join(home, "config.yaml"))
	}
	on := true
	sc.Enabled = &on // test a disabled one too
	cfg.MCPServers = map[string]mcp.ServerConfig{name: sc}
	rows, servers, closeAll, err := probe(home, cfg, []string{name}, true, zerolog.Nop())
	if err != nil {
		return err
	}
	defer closeAll()
	r, out := rows[0], opts.io.Out
	if r.State != string(mcp.Connected) {
		return &exitError{code: 1, err: fmt.Errorf("MCP server %s (%s %s) failed: %s", name, r.Transport, r.Target, first(r.Error, r.State))}
	}
	fmt.Fprintf(out, "connected to %s over %s in %s (process start or connection, and the MCP handshake)\n", first(r.Peer, name), r.Transport, r.Handshake)
	ts := servers[0].Tools()
	fmt.Fprintf(out, "%d tools, as the model sees them (toolset %s):\n", len(ts), mcp.Toolset(name))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, t := range ts {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Spec().Name, clip(strings.Join(strings.Fields(t.Spec().Description), " "), 80))
	}
	return tw.Flush()
}
