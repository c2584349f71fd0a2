package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsListOptions are the flags and arguments of `hermes approvals list`.
type approvalsListOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// approvalsListCmd is `hermes approvals list",`.
func approvalsListCmd(g *app.Factory) *cobra.Command {
	opts := &approvalsListOptions{app: g}
	list := &cobra.Command{
		Use:   "list",
		Short: "Grants in force, and the entries of command_allowlist in config.yaml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runApprovalsList(cmd.Context(), opts)
		},
	}
	return list
}

// runApprovalsList runs `hermes approvals list`.
func runApprovalsList(ctx context.Context, opts *approvalsListOptions) error {
	return withGrants(opts.app, func(l *grants.List) error {
		gs, err := l.Grants(ctx)
		if err != nil {
			return err
		}
		if len(gs) == 0 && len(l.Config()) == 0 {
			fmt.Fprintln(opts.io.Out, `no standing approvals (answer "always" to a question, or hermes approvals add PATTERN)`)
			return nil
		}
		w := tabwriter.NewWriter(opts.io.Out, 0, 2, 2, ' ', 0)
		fmt.Fprintln(w, "RULE\tBY\tSINCE\tSESSION\tDESCRIPTION\tCOMMAND")
		for _, gr := range gs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", gr.Pattern, gr.By, gr.At.Local().Format(time.DateTime), short(gr.Session), ruleDescription(gr.Pattern), clip(gr.Command, 60))
		}
		for _, p := range l.Config() {
			fmt.Fprintf(w, "%s\tconfig.yaml\t\t\t%s\t\n", judge.Key(p), ruleDescription(p))
		}
		return w.Flush()
	})
}
