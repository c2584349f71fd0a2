package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// mcpRemoveOptions are the flags and arguments of `hermes mcp remove`.
type mcpRemoveOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

func mcpRemoveCmd(g *app.Factory) *cobra.Command {
	opts := &mcpRemoveOptions{app: g}
	cmd := &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server from config.yaml", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runMCPRemove(cmd.Context(), opts)
		},
	}
	return cmd
}

// runMCPRemove runs `hermes mcp remove`.
func runMCPRemove(ctx context.Context, opts *mcpRemoveOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	name := opts.name
	path := filepath.Join(home, "config.yaml")
	err = editConfig(path, func(root *yaml.Node) error {
		i := keyIndex(root, "mcp_servers")
		var servers *yaml.Node
		if i >= 0 {
			servers = root.Content[i+1]
		}
		j := keyIndex(servers, name)
		if j < 0 {
			return fmt.Errorf("no MCP server %s in %s; hermes mcp list shows them", name, path)
		}
		servers.Content = append(servers.Content[:j], servers.Content[j+2:]...)
		if len(servers.Content) == 0 {
			root.Content = append(root.Content[:i], root.Content[i+2:]...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "removed MCP server %s from %s\n", name, path)
	return nil
}
