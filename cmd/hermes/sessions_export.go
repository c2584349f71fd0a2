package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
)

func sessionsExport(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "export ID",
		Short: "Write a session's events as JSON lines to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				n, err := session.Export(ctx, a.Store, s.ID, cmd.OutOrStdout())
				if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "exported %d events of %s\n", n, s.ID)
				}
				return err
			})
		},
	}
}
