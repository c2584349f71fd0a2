package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func pairingCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pairing", Short: "Let people in to the gateway: pending codes, approvals, revocations"}
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
	cmd.AddCommand(list, approve, revoke)
	return cmd
}
