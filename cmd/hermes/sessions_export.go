package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
)

// sessionsExportOptions are the flags and arguments of `hermes sessions export`.
type sessionsExportOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
}

func sessionsExport(g *app.Factory) *cobra.Command {
	opts := &sessionsExportOptions{app: g}
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Write a session's events as JSON lines to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsExport(cmd.Context(), opts)
		},
	}
	return cmd
}

// runSessionsExport runs `hermes sessions export`.
func runSessionsExport(ctx context.Context, opts *sessionsExportOptions) error {
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		n, err := session.Export(ctx, a.Store, s.ID, opts.io.Out, a.Blobs())
		if err == nil {
			fmt.Fprintf(opts.io.ErrOut, "exported %d events of %s\n", n, s.ID)
		}
		return err
	})
}
