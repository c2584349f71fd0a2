package main

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronResumeOptions are the flags and arguments of `hermes cron resume`.
type cronResumeOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
}

// cronResumeCmd is `hermes cron resume`.
func cronResumeCmd(g *app.Factory) *cobra.Command {
	opts := &cronResumeOptions{app: g}
	resume := &cobra.Command{Use: "resume ID", Short: "Let a paused job fire again from its next slot", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronResume(cmd.Context(), opts)
		},
	}
	return resume
}

// runCronResume runs `hermes cron resume`.
func runCronResume(ctx context.Context, opts *cronResumeOptions) error {
	return onJob(ctx, opts.app, opts.io.Out, opts.id, func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Resume(ctx, j.ID) })
}
