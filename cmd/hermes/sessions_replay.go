package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
)

// sessionsReplayOptions are the flags and arguments of `hermes sessions replay`.
type sessionsReplayOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
}

func sessionsReplay(g *app.Factory) *cobra.Command {
	opts := &sessionsReplayOptions{app: g}
	cmd := &cobra.Command{
		Use:   "replay ID",
		Short: "Re-run a session's turns with the recorded model answers and tool results, and check every decision matches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsReplay(cmd.Context(), opts)
		},
	}
	return cmd
}

// runSessionsReplay runs `hermes sessions replay`.
func runSessionsReplay(ctx context.Context, opts *sessionsReplayOptions) error {
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		rs, err := a.Store.ReadStream(ctx, events.SessionStream(s.ID), events.Forward, 0, 0)
		if err != nil {
			return err
		}
		rep, err := replay.Run(ctx, rs, nil)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("session %s: %w", s.ID, err)}
		}
		fmt.Fprintf(opts.io.Out, "replay of %s matches the record: %d turns, %d model calls, %d events\n", s.ID, rep.Turns, rep.Calls, rep.Events)
		return nil
	})
}
