package main

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronRemoveOptions are the flags and arguments of `hermes cron remove`.
type cronRemoveOptions struct {
	app    *app.Factory
	io     app.IOStreams
	id     string
	reason string
}

// cronRemoveCmd is `hermes cron remove`.
func cronRemoveCmd(g *app.Factory) *cobra.Command {
	opts := &cronRemoveOptions{app: g}
	remove := &cobra.Command{Use: "remove ID", Short: "Remove a job (its history stays)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronRemove(cmd.Context(), opts)
		},
	}
	remove.Flags().StringVar(&opts.reason, "reason", "", "why (shown in the history)")
	return remove
}

// runCronRemove runs `hermes cron remove`.
func runCronRemove(ctx context.Context, opts *cronRemoveOptions) error {
	return onJob(ctx, opts.app, opts.io.Out, opts.id, func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Remove(ctx, j.ID, opts.reason) })
}
