package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func configCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show, change and locate config.yaml"}
	cmd.AddCommand(configPathCmd(g), configShowCmd(g), configSetCmd(g))
	return cmd
}

// mask shows that a secret is set without showing it.
func mask(s string) string {
	switch {
	case s == "":
		return "(not set)"
	case len(s) <= 8:
		return "****"
	}
	return s[:3] + "…" + s[len(s)-2:] + fmt.Sprintf(" (%d chars)", len(s))
}

func orDash(s string) string {
	if s == "" || s == "0" {
		return "-"
	}
	return s
}
