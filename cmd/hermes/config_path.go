package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// configPathCmd is `hermes config path`.
func configPathCmd(g *app.Factory) *cobra.Command {
	path := &cobra.Command{
		Use: "path", Short: "Print the path of config.yaml", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(home, "config.yaml"))
			return nil
		},
	}
	return path
}
