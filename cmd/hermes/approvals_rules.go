package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsRulesCmd is `hermes approvals rules",`.
func approvalsRulesCmd(g *app.Factory) *cobra.Command {
	rules := &cobra.Command{
		Use:   "rules",
		Short: "The judge's rules of dangerous commands: ID (what add and command_allowlist take), level, description",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(w, "RULE\tLEVEL\tDESCRIPTION")
			for _, r := range judge.Rules() {
				level := "ask"
				if r.Hard {
					level = "refuse"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, level, r.Description)
			}
			return w.Flush()
		},
	}
	return rules
}
