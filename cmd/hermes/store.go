package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func storeCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Check, repair and copy the event log"}
	cmd.AddCommand(storeVerify(g), storeRepair(g), storeCopyCmd(g), storeAccept(g))
	return cmd
}

// damageExit is the exit code of verify and repair when damage is (left).
const damageExit = 3
