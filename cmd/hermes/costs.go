package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/costs"
)

// costsOptions are the flags and arguments of `hermes costs`.
type costsOptions struct {
	app       *app.Factory
	io        app.IOStreams
	by, since string
	asJSON    bool
}

func costsCmd(g *app.Factory) *cobra.Command {
	opts := &costsOptions{app: g}
	cmd := &cobra.Command{
		Use:   "costs",
		Short: "Token and cost totals by session, lineage, model, provider, source or day",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runCosts(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.by, "by", "session", "group by session, lineage, model, provider, source or day")
	cmd.Flags().StringVar(&opts.since, "since", "", "only days on or after YYYY-MM-DD (UTC)")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	return cmd
}

// runCosts runs `hermes costs`.
func runCosts(ctx context.Context, opts *costsOptions) error {
	if opts.since != "" {
		if _, err := time.Parse("2006-01-02", opts.since); err != nil {
			return fmt.Errorf("--since %q: use YYYY-MM-DD", opts.since)
		}
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Fresh(ctx); err != nil {
		return err
	}
	rows, err := costs.Totals(ctx, a.ProjDB.Reader(), opts.by, opts.since)
	if err != nil {
		return err
	}
	if opts.asJSON {
		if rows == nil {
			rows = []costs.Row{}
		}
		return writeJSON(opts.io.Out, rows)
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tCALLS\tPROMPT\tCOMPLETION\tCACHE READ\tCACHE WRITE\tCOST\n", map[string]string{"session": "SESSION", "lineage": "LINEAGE ROOT",
		"model": "MODEL", "provider": "PROVIDER", "source": "SOURCE", "day": "DAY"}[opts.by])
	var total costs.Row
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t$%.4f\n", r.Key, r.Calls, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens, r.Cost)
		total.Calls, total.Usage, total.Cost = total.Calls+r.Calls, total.Usage.Add(r.Usage), total.Cost+r.Cost
	}
	fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t%d\t$%.4f\n", total.Calls, total.Usage.PromptTokens, total.Usage.CompletionTokens, total.Usage.CacheReadTokens, total.Usage.CacheWriteTokens, total.Cost)
	return tw.Flush()
}
