package main

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronPauseOptions are the flags and arguments of `hermes cron pause`.
type cronPauseOptions struct {
	app    *app.Factory
	io     app.IOStreams
	id     string
	reason string
}

// cronPauseCmd is `hermes cron pause`.
func cronPauseCmd(g *app.Factory) *cobra.Command {
	opts := &cronPauseOptions{app: g}
	pause := &cobra.Command{Use: "pause ID", Short: "Stop a job from firing until it is resumed", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronPause(cmd.Context(), opts)
		},
	}
	pause.Flags().StringVar(&opts.reason, "reason", "", "why (shown in the history)")
	return pause
}

// runCronPause runs `hermes cron pause`.
func runCronPause(ctx context.Context, opts *cronPauseOptions) error {
	return onJob(ctx, opts.app, opts.io.Out, opts.id, func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Pause(ctx, j.ID, opts.reason) })
}
