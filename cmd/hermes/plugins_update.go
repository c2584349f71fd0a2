package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pluginsUpdateOptions are the flags and arguments of `hermes plugins update`.
type pluginsUpdateOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
	ref  string
}

func pluginsUpdateCmd(g *app.Factory) *cobra.Command {
	opts := &pluginsUpdateOptions{app: g}
	cmd := &cobra.Command{
		Use: "update NAME", Short: "Move a plugin to what its source has now (a git source: --ref, or its default branch) and pin that", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.name = ioOf(cmd), args[0]
			return runPluginsUpdate(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ref, "ref", "", "the git commit, tag or branch to move to")
	return cmd
}

// runPluginsUpdate runs `hermes plugins update`.
func runPluginsUpdate(ctx context.Context, opts *pluginsUpdateOptions) error {
	return withBook(opts.app, func(_ *app.App, b *plugins.Book) error {
		p, changed, err := b.Update(ctx, opts.name, opts.ref)
		if err != nil {
			return err
		}
		if !changed {
			fmt.Fprintf(opts.io.Out, "%s is up to date (%s)\n", p.Name, pinLine(p))
			return nil
		}
		printPlugin(opts.io.Out, "updated", p)
		return nil
	})
}
