package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronResumeCmd is `hermes cron resume`.
func cronResumeCmd(g *app.Factory) *cobra.Command {
	resume := &cobra.Command{Use: "resume ID", Short: "Let a paused job fire again from its next slot", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Resume(cmd.Context(), j.ID) })
		}}
	return resume
}
