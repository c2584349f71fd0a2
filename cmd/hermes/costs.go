package main

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
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
	rows, err := costs.Totals(ctx, a.ProjDB.Reader(), opts.by, opts.since, knownPrices(a.Home).CallCost)
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
	var total model.Bill
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Key, r.Calls, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens,
			model.CostText(r.Cost, int(r.Unpriced), int(r.Calls)))
		total.Calls, total.Usage, total.Cost, total.Unpriced = total.Calls+int(r.Calls), total.Usage.Add(r.Usage), total.Cost+r.Cost, total.Unpriced+int(r.Unpriced)
		for _, m := range r.UnpricedModels {
			if !slices.Contains(total.UnpricedModels, m) {
				total.UnpricedModels = append(total.UnpricedModels, m)
			}
		}
	}
	fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t%d\t%s\n", total.Calls, total.Usage.PromptTokens, total.Usage.CompletionTokens, total.Usage.CacheReadTokens, total.Usage.CacheWriteTokens, total.CostText())
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := total.Unknown(); u != "" {
		fmt.Fprintf(opts.io.Out, "unknown cost: %s\n", u)
	}
	return nil
}

// sessionCosts are the cost totals of every session, priced at the
// home's prices (config.yaml's over the defaults), for the lists that
// show a cost per session.
func sessionCosts(ctx context.Context, a *app.App) (map[string]costs.Row, error) {
	rows, err := costs.Totals(ctx, a.ProjDB.Reader(), "session", "", knownPrices(a.Home).CallCost)
	if err != nil {
		return nil, err
	}
	out := make(map[string]costs.Row, len(rows))
	for _, r := range rows {
		out[r.Key] = r
	}
	return out, nil
}

// sessionCost is a session's cost for people ("$0.0123", "unknown").
func sessionCost(all map[string]costs.Row, id string) string {
	r := all[id]
	return model.CostText(r.Cost, int(r.Unpriced), int(r.Calls))
}
