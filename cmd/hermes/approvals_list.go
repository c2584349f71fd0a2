package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsListCmd is `hermes approvals list",`.
func approvalsListCmd(g *app.Factory) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "Grants in force, and the entries of command_allowlist in config.yaml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withGrants(g, func(l *grants.List) error {
				gs, err := l.Grants(cmd.Context())
				if err != nil {
					return err
				}
				if len(gs) == 0 && len(l.Config()) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), `no standing approvals (answer "always" to a question, or hermes approvals add PATTERN)`)
					return nil
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
				fmt.Fprintln(w, "RULE\tBY\tSINCE\tSESSION\tDESCRIPTION\tCOMMAND")
				for _, gr := range gs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", gr.Pattern, gr.By, gr.At.Local().Format(time.DateTime), short(gr.Session), ruleDescription(gr.Pattern), clip(gr.Command, 60))
				}
				for _, p := range l.Config() {
					fmt.Fprintf(w, "%s\tconfig.yaml\t\t\t%s\t\n", judge.Key(p), ruleDescription(p))
				}
				return w.Flush()
			})
		},
	}
	return list
}
