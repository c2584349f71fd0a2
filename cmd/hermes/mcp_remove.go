package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func mcpRemoveCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server from config.yaml", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			name := args[0]
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
			fmt.Fprintf(cmd.OutOrStdout(), "removed MCP server %s from %s\n", name, path)
			return nil
		},
	}
}
