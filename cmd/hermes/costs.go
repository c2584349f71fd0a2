package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/costs"
)

func costsCmd(g *app.Factory) *cobra.Command {
	var by, since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "costs",
		Short: "Token and cost totals by session, lineage, model, provider, source or day",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				if _, err := time.Parse("2006-01-02", since); err != nil {
					return fmt.Errorf("--since %q: use YYYY-MM-DD", since)
				}
			}
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			if err := a.Fresh(cmd.Context()); err != nil {
				return err
			}
			rows, err := costs.Totals(cmd.Context(), a.ProjDB.Reader(), by, since)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []costs.Row{}
				}
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\tCALLS\tPROMPT\tCOMPLETION\tCACHE READ\tCACHE WRITE\tCOST\n", map[string]string{"session": "SESSION", "lineage": "LINEAGE ROOT",
				"model": "MODEL", "provider": "PROVIDER", "source": "SOURCE", "day": "DAY"}[by])
			var total costs.Row
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t$%.4f\n", r.Key, r.Calls, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens, r.Cost)
				total.Calls, total.Usage, total.Cost = total.Calls+r.Calls, total.Usage.Add(r.Usage), total.Cost+r.Cost
			}
			fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t%d\t$%.4f\n", total.Calls, total.Usage.PromptTokens, total.Usage.CompletionTokens, total.Usage.CacheReadTokens, total.Usage.CacheWriteTokens, total.Cost)
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&by, "by", "session", "group by session, lineage, model, provider, source or day")
	cmd.Flags().StringVar(&since, "since", "", "only days on or after YYYY-MM-DD (UTC)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
