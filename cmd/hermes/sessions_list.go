package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// knownPrices is the built-in price table with config.yaml's prices over
// it (the table alone when the file cannot be read).
func knownPrices(home string) model.Prices {
	p := model.DefaultPrices()
	if c, err := config.Load(home); err == nil {
		for k, v := range c.Prices {
			p[k] = v
		}
	}
	return p
}

// listed reports whether s belongs in the default session list: subagent and review
// sessions (see sessions tree) and sessions without a message are shown
// only with --all.
func listed(s sessions.Summary) bool {
	return s.Reason != schema.StartSubagent && s.Reason != schema.StartReview && s.Messages > 0
}

// sessionsListOptions are the flags and arguments of `hermes sessions list`.
type sessionsListOptions struct {
	app         *app.Factory
	io          app.IOStreams
	asJSON, all bool
	limit       int
}

func sessionsList(g *app.Factory) *cobra.Command {
	opts := &sessionsListOptions{app: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runSessionsList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&opts.limit, "limit", 0, "show at most N sessions (0: all)")
	cmd.Flags().BoolVar(&opts.all, "all", false, "show every session on its own line: subagent sessions, sessions without messages, and each branch /undo, /retry, /branch or compression made")
	return cmd
}

// runSessionsList runs `hermes sessions list`.
func runSessionsList(ctx context.Context, opts *sessionsListOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Fresh(ctx); err != nil {
		return err
	}
	list, err := sessions.List(ctx, a.ProjDB.Reader(), 0)
	if err != nil {
		return err
	}
	hidden := 0
	var convs []conversation
	if opts.all {
		for _, s := range list {
			convs = append(convs, conversation{Summary: s, Sessions: 1})
		}
	} else {
		nodes, err := lineage.Dump(ctx, a.ProjDB.Reader())
		if err != nil {
			return err
		}
		convs, hidden = conversations(list, nodes)
	}
	if opts.limit > 0 && len(convs) > opts.limit {
		convs = convs[:opts.limit]
	}
	out := opts.io.Out
	if opts.asJSON {
		if convs == nil {
			convs = []conversation{}
		}
		return writeJSON(out, convs)
	}
	if len(convs) == 0 {
		if hidden > 0 {
			fmt.Fprintf(out, "no sessions with messages (%d empty or subagent sessions: --all shows them)\n", hidden)
			return nil
		}
		fmt.Fprintln(out, "no sessions yet")
		return nil
	}
	defer func() {
		if hidden > 0 {
			fmt.Fprintf(opts.io.ErrOut, "(%d empty or subagent sessions not shown: --all shows them)\n", hidden)
		}
	}()
	spent, err := sessionCosts(ctx, a)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tSOURCE\tMODEL\tMSGS\tTOKENS\tCOST\tSTATUS\tLAST ACTIVE")
	for _, s := range convs {
		// The conversation's cost: every session of it, priced now where
		// a call recorded none.
		var r costs.Row
		for _, id := range append([]string{s.ID}, s.Branches...) {
			x := spent[id]
			r.Cost, r.Unpriced, r.Calls = r.Cost+x.Cost, r.Unpriced+x.Unpriced, r.Calls+x.Calls
		}
		cost := model.CostText(r.Cost, int(r.Unpriced), int(r.Calls))
		title := clip(s.Title, 40)
		if n := len(s.Branches); n > 0 {
			title += fmt.Sprintf(" (+%d %s)", n, plural(n, "branch", "branches"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.ID, title, s.Source, s.Model, s.Messages,
			s.Usage.Total(), cost, s.Status, s.LastActive.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// conversation is one entry of the session list: the sessions one chat
// made as one conversation, which /undo, /retry, /branch and compression
// fork into new sessions, shown as the most recently active of them.
type conversation struct {
	// Summary is the most recently active session of the conversation,
	// the one a resume continues, with the tokens and cost of all of
	// them.
	sessions.Summary
	// Sessions is how many sessions the conversation holds.
	Sessions int `json:"sessions"`
	// Branches are the other sessions, most recently active first.
	Branches []string `json:"branches,omitempty"`
}

// conversations groups list (most recently active first) into
// conversations by their lineage: a session forked or compressed from
// another belongs to its conversation (a subagent's session, or a /new
// one, starts its own). A conversation is listed when one of its
// sessions is (listed); hidden counts the sessions of those that are not.
func conversations(list []sessions.Summary, nodes []lineage.Node) (convs []conversation, hidden int) {
	parent := map[string]string{}
	for _, n := range nodes {
		if n.Parent != "" && (n.Reason == schema.StartFork || n.Reason == schema.StartCompression) {
			parent[n.ID] = n.Parent
		}
	}
	root := func(id string) string {
		for i := 0; i < 10000; i++ {
			p, ok := parent[id]
			if !ok {
				break
			}
			id = p
		}
		return id
	}
	at := map[string]int{}
	var groups [][]sessions.Summary
	for _, s := range list {
		r := root(s.ID)
		i, ok := at[r]
		if !ok {
			i = len(groups)
			at[r] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], s)
	}
	for _, g := range groups {
		head := -1
		for i, s := range g {
			if listed(s) {
				head = i
				break
			}
		}
		if head < 0 {
			hidden += len(g)
			continue
		}
		// The head is the most recently active session with messages; a
		// fork left empty by /undo of the first message is a branch.
		c := conversation{Summary: g[head], Sessions: len(g)}
		c.Usage, c.CostUSD = schema.Usage{}, 0
		for i, s := range g {
			c.Usage = c.Usage.Add(s.Usage)
			c.CostUSD += s.CostUSD
			if c.Title == "" {
				c.Title = s.Title
			}
			if i != head {
				c.Branches = append(c.Branches, s.ID)
			}
		}
		convs = append(convs, c)
	}
	return convs, hidden
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
