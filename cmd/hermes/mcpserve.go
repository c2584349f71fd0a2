package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func mcpServeCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "Serve this Hermes over MCP", RunE: func(*cobra.Command, []string) error { return errors.New("todo") }}
}
