package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// configSetCmd is `hermes config set`.
func configSetCmd(g *app.Factory) *cobra.Command {
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a key of config.yaml (dotted: agent.max_turns 40); the rest of the file, comments included, is kept",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			if err := config.Set(home, args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s = %s\n", filepath.Join(home, "config.yaml"), args[0], args[1])
			return nil
		},
	}
	return set
}
