package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingApproveCmd is `hermes pairing approve`.
func pairingApproveCmd(g *app.Factory) *cobra.Command {
	approve := &cobra.Command{
		Use:   "approve CODE",
		Short: "Let in the user a pairing code was given to",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			p, err := gateway.LoadPairings(cmd.Context(), a.Store)
			if err != nil {
				return err
			}
			who, err := p.Approve(cmd.Context(), a.Store, args[0], time.Now())
			if err != nil {
				return err
			}
			name := who.User
			if who.UserName != "" {
				name += " (" + who.UserName + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "paired: %s user %s\n", who.Platform, name)
			return nil
		},
	}
	return approve
}
