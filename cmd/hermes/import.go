package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func importCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import history from elsewhere"}
	cmd.AddCommand(importHermesStateCmd(g))
	return cmd
}
