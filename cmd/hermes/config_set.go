package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// configSetOptions are the flags and arguments of `hermes config set`.
type configSetOptions struct {
	app   *app.Factory
	io    app.IOStreams
	key   string
	value string
}

// configSetCmd is `hermes config set`.
func configSetCmd(g *app.Factory) *cobra.Command {
	opts := &configSetOptions{app: g}
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a key of config.yaml (dotted: agent.max_turns 40); the rest of the file, comments included, is kept",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.key = args[0]
			opts.value = args[1]
			return runConfigSet(cmd.Context(), opts)
		},
	}
	return set
}

// runConfigSet runs `hermes config set`.
func runConfigSet(ctx context.Context, opts *configSetOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	if err := config.Set(home, opts.key, opts.value); err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "%s: %s = %s\n", filepath.Join(home, "config.yaml"), opts.key, opts.value)
	return nil
}
