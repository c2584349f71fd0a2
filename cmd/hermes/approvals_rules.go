package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsRulesOptions are the flags and arguments of `hermes approvals rules`.
type approvalsRulesOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// approvalsRulesCmd is `hermes approvals rules",`.
func approvalsRulesCmd(g *app.Factory) *cobra.Command {
	opts := &approvalsRulesOptions{app: g}
	rules := &cobra.Command{
		Use:   "rules",
		Short: "The judge's rules of dangerous commands: ID (what add and command_allowlist take), level, description",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runApprovalsRules(cmd.Context(), opts)
		},
	}
	return rules
}

// runApprovalsRules runs `hermes approvals rules`.
func runApprovalsRules(ctx context.Context, opts *approvalsRulesOptions) error {
	w := tabwriter.NewWriter(opts.io.Out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "RULE\tLEVEL\tDESCRIPTION")
	for _, r := range judge.Rules() {
		level := "ask"
		if r.Hard {
			level = "refuse"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, level, r.Description)
	}
	return w.Flush()
}
