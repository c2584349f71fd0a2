package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func projectionsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "projections", Short: "Inspect and rebuild the read models derived from events"}
	cmd.AddCommand(projectionsStatusCmd(g), projectionsRebuildCmd(g))
	return cmd
}
