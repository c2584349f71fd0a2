package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pluginsInstallOptions are the flags and arguments of `hermes plugins install`.
type pluginsInstallOptions struct {
	app      *app.Factory
	io       app.IOStreams
	source   string
	ref      string
	disabled bool
}

func pluginsInstallCmd(g *app.Factory) *cobra.Command {
	opts := &pluginsInstallOptions{app: g}
	cmd := &cobra.Command{
		Use:   "install SOURCE",
		Short: "Install a plugin from a directory or a git repository (URL, or any path with --ref), pinned to its commit and the hash of its files",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.source = ioOf(cmd), args[0]
			return runPluginsInstall(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ref, "ref", "", "the git commit, tag or branch to check out (default: the repository's default branch)")
	cmd.Flags().BoolVar(&opts.disabled, "disabled", false, "install it off (hermes plugins enable turns it on)")
	return cmd
}

// runPluginsInstall runs `hermes plugins install`.
func runPluginsInstall(ctx context.Context, opts *pluginsInstallOptions) error {
	return withBook(opts.app, func(_ *app.App, b *plugins.Book) error {
		p, err := b.Install(ctx, opts.source, opts.ref, opts.disabled)
		if err != nil {
			return err
		}
		printPlugin(opts.io.Out, "installed", p)
		return nil
	})
}
