package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
)

func sessionsFork(g *app.Factory) *cobra.Command {
	var at int
	cmd := &cobra.Command{
		Use:   "fork ID --at EVENT",
		Short: "Start a new session whose history is ID's up to event EVENT (a revision, see sessions events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if at < 0 {
				return fmt.Errorf("--at is required: the revision of the last event to keep (hermes sessions events ID lists them)")
			}
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				id, err := session.Fork(ctx, a.Store, s.ID, uint64(at))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
				fmt.Fprintf(cmd.ErrOrStderr(), "forked %s at event %d; continue with: hermes chat --resume %s\n", s.ID, at, id)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&at, "at", -1, "revision of the last event the fork keeps")
	return cmd
}
