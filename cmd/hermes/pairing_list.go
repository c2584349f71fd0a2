package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingListCmd is `hermes pairing list`.
func pairingListCmd(g *app.Factory) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "Pending pairing codes and paired users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			p, err := gateway.LoadPairings(cmd.Context(), a.Store)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(w, "STATE\tPLATFORM\tUSER\tNAME\tSINCE\tEXPIRES")
			for _, q := range p.Live(time.Now()) {
				fmt.Fprintf(w, "pending\t%s\t%s\t%s\t%s\t%s\n", q.Platform, q.User, q.UserName, q.Requested.Local().Format(time.DateTime), q.Expires.Local().Format(time.DateTime))
			}
			for _, a := range p.ApprovedList() {
				fmt.Fprintf(w, "paired\t%s\t%s\t%s\t%s\t\n", a.Platform, a.User, a.UserName, a.Since.Local().Format(time.DateTime))
			}
			return w.Flush()
		},
	}
	return list
}
