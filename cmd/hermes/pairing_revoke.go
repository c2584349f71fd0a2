package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingRevokeCmd is `hermes pairing revoke`.
func pairingRevokeCmd(g *app.Factory) *cobra.Command {
	revoke := &cobra.Command{
		Use:   "revoke USER",
		Short: "Shut a paired user out again (USER or PLATFORM/USER)",
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
			who, err := p.Revoke(cmd.Context(), a.Store, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked: %s user %s\n", who.Platform, who.User)
			return nil
		},
	}
	return revoke
}
