package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func clusterCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "The cluster's own set-up: certificates for mutual TLS between its members"}
	cmd.AddCommand(clusterCertsCmd(g))
	return cmd
}
