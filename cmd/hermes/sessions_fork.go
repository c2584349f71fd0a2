package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
)

// sessionsForkOptions are the flags and arguments of `hermes sessions fork`.
type sessionsForkOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
	at  int
}

func sessionsFork(g *app.Factory) *cobra.Command {
	opts := &sessionsForkOptions{app: g}
	cmd := &cobra.Command{
		Use:   "fork ID --at EVENT",
		Short: "Start a new session whose history is ID's up to event EVENT (a revision, see sessions events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsFork(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.at, "at", -1, "revision of the last event the fork keeps")
	return cmd
}

// runSessionsFork runs `hermes sessions fork`.
func runSessionsFork(ctx context.Context, opts *sessionsForkOptions) error {
	if opts.at < 0 {
		return fmt.Errorf("--at is required: the revision of the last event to keep (hermes sessions events ID lists them)")
	}
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		id, err := session.Fork(ctx, a.Store, s.ID, uint64(opts.at))
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.io.Out, "%s\n", id)
		fmt.Fprintf(opts.io.ErrOut, "forked %s at event %d; continue with: hermes chat --resume %s\n", s.ID, opts.at, id)
		return nil
	})
}
