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

// listed reports whether s belongs in the default session list: subagent
// sessions (see sessions tree) and sessions without a message are shown
// only with --all.
func listed(s sessions.Summary) bool {
	return s.Reason != schema.StartSubagent && s.Messages > 0
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
	cmd.Flags().BoolVar(&opts.all, "all", false, "also show subagent sessions and sessions without messages")
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
	if !opts.all {
		kept := list[:0]
		for _, s := range list {
			if listed(s) {
				kept = append(kept, s)
			} else {
				hidden++
			}
		}
		list = kept
	}
	if opts.limit > 0 && len(list) > opts.limit {
		list = list[:opts.limit]
	}
	out := opts.io.Out
	if opts.asJSON {
		if list == nil {
			list = []sessions.Summary{}
		}
		return writeJSON(out, list)
	}
	if len(list) == 0 {
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
	prices := knownPrices(a.Home)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tSOURCE\tMODEL\tMSGS\tTOKENS\tCOST\tSTATUS\tLAST ACTIVE")
	for _, s := range list {
		cost := fmt.Sprintf("$%.4f", s.CostUSD)
		if _, ok := prices.Lookup(s.Model); !ok && s.CostUSD == 0 && s.Usage.Total() > 0 {
			cost = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.ID, clip(s.Title, 40), s.Source, s.Model, s.Messages,
			s.Usage.Total(), cost, s.Status, s.LastActive.Local().Format(time.DateTime))
	}
	return tw.Flush()
}
