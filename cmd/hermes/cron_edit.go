package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// cronEditCmd is `hermes cron edit`.
func cronEditCmd(g *app.Factory) *cobra.Command {
	edit := &jobFlags{}
	editCmd := &cobra.Command{Use: "edit ID", Short: "Change a job (only the flags given)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) {
				j, err := h.jobs.Update(cmd.Context(), j.ID, h.rules, func(s *schema.JobSpec) error { return edit.apply(cmd, s) })
				if errors.Is(err, cron.ErrNothing) {
					return nil, errors.New("nothing to change: give the flags to change, such as --schedule or --prompt")
				}
				return j, err
			})
		}}
	edit.register(editCmd)
	return editCmd
}
