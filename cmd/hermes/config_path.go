package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// configPathOptions are the flags and arguments of `hermes config path`.
type configPathOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// configPathCmd is `hermes config path`.
func configPathCmd(g *app.Factory) *cobra.Command {
	opts := &configPathOptions{app: g}
	path := &cobra.Command{
		Use: "path", Short: "Print the path of config.yaml", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runConfigPath(cmd.Context(), opts)
		},
	}
	return path
}

// runConfigPath runs `hermes config path`.
func runConfigPath(ctx context.Context, opts *configPathOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.io.Out, filepath.Join(home, "config.yaml"))
	return nil
}
