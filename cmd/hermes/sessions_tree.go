package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
)

// sessionsTreeOptions are the flags and arguments of `hermes sessions tree`.
type sessionsTreeOptions struct {
	app    *app.Factory
	io     app.IOStreams
	id     string
	asJSON bool
}

func sessionsTree(g *app.Factory) *cobra.Command {
	opts := &sessionsTreeOptions{app: g}
	cmd := &cobra.Command{
		Use:   "tree ID",
		Short: "Show the tree of sessions ID belongs to (compressions, forks, subagents)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsTree(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	return cmd
}

// runSessionsTree runs `hermes sessions tree`.
func runSessionsTree(ctx context.Context, opts *sessionsTreeOptions) error {
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
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
		if opts.asJSON {
			return writeJSON(opts.io.Out, out)
		}
		spent, err := sessionCosts(ctx, a)
		if err != nil {
			return err
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
		w := opts.io.Out
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
			fmt.Fprintf(w, "%s%s%s  [%s] %s  msgs %d  tokens %d  %s%s\n", prefix, branch, r.ID, what, r.Summary.Status, r.Summary.Messages,
				r.Summary.Usage.Total(), sessionCost(spent, r.ID), mark)
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
}

// showLineage prints the history of every session from the root to id.
func showLineage(ctx context.Context, out io.Writer, a *app.App, id string) error {
	chain, err := lineage.Chain(ctx, a.ProjDB.Reader(), id)
	if err != nil {
		return err
	}
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
