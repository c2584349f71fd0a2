package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
)

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
