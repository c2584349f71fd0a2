package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronRemoveCmd is `hermes cron remove`.
func cronRemoveCmd(g *app.Factory) *cobra.Command {
	var reason string
	remove := &cobra.Command{Use: "remove ID", Short: "Remove a job (its history stays)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Remove(cmd.Context(), j.ID, reason) })
		}}
	remove.Flags().StringVar(&reason, "reason", "", "why (shown in the history)")
	return remove
}
