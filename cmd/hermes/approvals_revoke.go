package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsRevokeCmd is `hermes approvals revoke`.
func approvalsRevokeCmd(g *app.Factory) *cobra.Command {
	var reason string
	revoke := &cobra.Command{
		Use:   "revoke RULE",
		Short: "Take a grant back (the rule by its ID or description): commands it allowed are asked about again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := judge.Key(strings.TrimSpace(args[0]))
			return withGrants(g, func(l *grants.List) error {
				if err := l.Revoke(cmd.Context(), p, grants.ByCLI, reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked: %s\n", p)
				return nil
			})
		},
	}
	revoke.Flags().StringVar(&reason, "reason", "", "why, kept with the revocation")
	return revoke
}
