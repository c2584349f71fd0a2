package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func pairingCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pairing", Short: "Let people in to the gateway: pending codes, approvals, revocations"}
	cmd.AddCommand(pairingListCmd(g), pairingApproveCmd(g), pairingRevokeCmd(g))
	return cmd
}
