package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func toolsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "Show the tools and which are enabled"}
	cmd.AddCommand(toolsListCmd(g))
	return cmd
}
