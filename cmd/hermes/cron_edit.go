package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// cronEditOptions are the flags and arguments of `hermes cron edit`.
type cronEditOptions struct {
	app  *app.Factory
	io   app.IOStreams
	id   string
	edit *jobFlags
}

// cronEditCmd is `hermes cron edit`.
func cronEditCmd(g *app.Factory) *cobra.Command {
	opts := &cronEditOptions{app: g, edit: &jobFlags{}}
	editCmd := &cobra.Command{Use: "edit ID", Short: "Change a job (only the flags given)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronEdit(cmd.Context(), opts)
		},
	}
	opts.edit.register(editCmd)
	return editCmd
}

// runCronEdit runs `hermes cron edit`.
func runCronEdit(ctx context.Context, opts *cronEditOptions) error {
	return onJob(ctx, opts.app, opts.io.Out, opts.id, func(h *cronHome, j *cron.Job) (*cron.Job, error) {
		j, err := h.jobs.Update(ctx, j.ID, h.rules, func(s *schema.JobSpec) error { return opts.edit.apply(opts.io.In, s) })
		if errors.Is(err, cron.ErrNothing) {
			return nil, errors.New("nothing to change: give the flags to change, such as --schedule or --prompt")
		}
		return j, err
	})
}
