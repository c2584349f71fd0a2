package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pluginsRemoveOptions are the arguments of `hermes plugins remove`.
type pluginsRemoveOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

func pluginsRemoveCmd(g *app.Factory) *cobra.Command {
	opts := &pluginsRemoveOptions{app: g}
	return &cobra.Command{
		Use: "remove NAME", Aliases: []string{"rm", "uninstall"}, Short: "Remove a plugin and its files", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.name = ioOf(cmd), args[0]
			return runPluginsRemove(cmd.Context(), opts)
		},
	}
}

// runPluginsRemove runs `hermes plugins remove`.
func runPluginsRemove(ctx context.Context, opts *pluginsRemoveOptions) error {
	return withBook(opts.app, func(_ *app.App, b *plugins.Book) error {
		if err := b.Remove(ctx, opts.name); err != nil {
			return err
		}
		fmt.Fprintf(opts.io.Out, "removed %s\n", opts.name)
		return nil
	})
}

// pluginsEnableOptions are the arguments of `hermes plugins enable` and
// `disable`.
type pluginsEnableOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
	on   bool
}

func pluginsEnableCmd(g *app.Factory, on bool) *cobra.Command {
	opts := &pluginsEnableOptions{app: g, on: on}
	use, short := "enable NAME", "Turn a plugin on: chats started from now on run it"
	if !on {
		use, short = "disable NAME", "Turn a plugin off: chats started from now on do not run it (its files stay)"
	}
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.name = ioOf(cmd), args[0]
			return runPluginsEnable(cmd.Context(), opts)
		},
	}
}

// runPluginsEnable runs `hermes plugins enable` and `disable`.
func runPluginsEnable(ctx context.Context, opts *pluginsEnableOptions) error {
	return withBook(opts.app, func(_ *app.App, b *plugins.Book) error {
		changed, err := b.SetEnabled(ctx, opts.name, opts.on)
		if err != nil {
			return err
		}
		state := map[bool]string{true: "on", false: "off"}[opts.on]
		if !changed {
			fmt.Fprintf(opts.io.Out, "%s was %s already\n", opts.name, state)
			return nil
		}
		fmt.Fprintf(opts.io.Out, "%s is %s\n", opts.name, state)
		return nil
	})
}
