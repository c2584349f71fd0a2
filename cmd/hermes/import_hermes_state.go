package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/importer"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// importHermesStateCmd is `hermes import hermes-state`.
func importHermesStateCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "hermes-state PATH",
		Short: "Import the sessions of a Python Hermes Agent state.db (sessions already imported are skipped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			rep, err := importer.HermesState(cmd.Context(), args[0], a.Store)
			if err != nil {
				return err
			}
			if err := a.Fresh(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d sessions (%d messages); %d already there\n", rep.Sessions, rep.Messages, rep.Skipped)
			return nil
		},
	}
}
