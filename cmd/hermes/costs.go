package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
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

func sessionsTree(g *app.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tree ID",
		Short: "Show the tree of sessions ID belongs to (compressions, forks, subagents)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				nodes, err := lineage.Tree(ctx, a.ProjDB.Reader(), s.ID)
				if err != nil {
					return err
				}
				type row struct {
					lineage.Node
					Summary sessions.Summary `json:"session"`
				}
				var out []row
				for _, n := range nodes {
					sum, _, _ := sessions.Get(ctx, a.ProjDB.Reader(), n.ID)
					out = append(out, row{n, sum})
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				children := map[string][]row{}
				var roots []row
				ids := map[string]bool{}
				for _, r := range out {
					ids[r.ID] = true
				}
				for _, r := range out {
					if r.Parent == "" || !ids[r.Parent] {
						roots = append(roots, r)
					} else {
						children[r.Parent] = append(children[r.Parent], r)
					}
				}
				w := cmd.OutOrStdout()
				var walk func(r row, prefix string, last bool, top bool)
				walk = func(r row, prefix string, last bool, top bool) {
					branch, next := "", ""
					if !top {
						branch, next = "├─ ", "│  "
						if last {
							branch, next = "└─ ", "   "
						}
					}
					mark := ""
					if r.ID == s.ID {
						mark = "  ◀"
					}
					what := r.Reason
					if r.Goal != "" {
						what += ": " + clip(r.Goal, 40)
					}
					fmt.Fprintf(w, "%s%s%s  [%s] %s  msgs %d  tokens %d  $%.4f%s\n", prefix, branch, r.ID, what, r.Summary.Status, r.Summary.Messages,
						r.Summary.Usage.Total(), r.Summary.CostUSD, mark)
					kids := children[r.ID]
					for i, k := range kids {
						walk(k, prefix+next, i == len(kids)-1, false)
					}
				}
				for _, r := range roots {
					walk(r, "", true, true)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// showLineage prints the history of every session from the root to id.
func showLineage(cmd *cobra.Command, a *app.App, id string) error {
	ctx := cmd.Context()
	chain, err := lineage.Chain(ctx, a.ProjDB.Reader(), id)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for i, n := range chain {
		fmt.Fprintf(out, "═══ %d/%d session %s (%s)\n", i+1, len(chain), n.ID, n.Reason)
		msgs, err := history.Messages(ctx, a.ProjDB.Reader(), n.ID)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			printMessage(out, m)
		}
		fmt.Fprintln(out)
	}
	return nil
}
