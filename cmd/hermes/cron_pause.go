package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronPauseCmd is `hermes cron pause`.
func cronPauseCmd(g *app.Factory) *cobra.Command {
	var reason string
	pause := &cobra.Command{Use: "pause ID", Short: "Stop a job from firing until it is resumed", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Pause(cmd.Context(), j.ID, reason) })
		}}
	pause.Flags().StringVar(&reason, "reason", "", "why (shown in the history)")
	return pause
}
