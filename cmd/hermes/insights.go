package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// insightsOptions are the flags of `hermes insights`.
type insightsOptions struct {
	app  *app.Factory
	io   app.IOStreams
	days int
}

// insightsCmd is `hermes insights`, as /insights shows it in a chat.
func insightsCmd(g *app.Factory) *cobra.Command {
	opts := &insightsOptions{app: g}
	cmd := &cobra.Command{
		Use:   "insights",
		Short: "Conversations, model calls, tool calls and cost of the last days",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runInsights(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.days, "days", 30, "how many days back")
	return cmd
}

// runInsights runs `hermes insights`.
func runInsights(ctx context.Context, opts *insightsOptions) error {
	if opts.days < 1 {
		return fmt.Errorf("--days %d: give a number of days, 1 or more", opts.days)
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	in, err := insightsOf(ctx, a, opts.days, time.Now())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.io.Out, in)
	return err
}

// insights sum up what the home's agent did over some days, from the
// projections (sessions, lineage, costs) and the sessions' own events
// (tool calls).
type insights struct {
	Days  int
	Since time.Time
	// Conversations are those active since Since (sessions list's
	// entries), over Sessions sessions, subagents' included.
	Conversations, Sessions, Messages int
	Calls                             int64
	Usage                             schema.Usage
	Cost                              float64
	// ByModel are the calls and cost of each model, most costly first.
	ByModel []costs.Row
	// Tools counts the tool calls the models made, by tool.
	Tools     map[string]int
	ToolCalls int
	// BusiestDay is the day of the highest cost (YYYY-MM-DD), "" with none.
	BusiestDay     string
	BusiestDayCost float64
}

// insightsOf sums up the days before now.
func insightsOf(ctx context.Context, a *app.App, days int, now time.Time) (insights, error) {
	in := insights{Days: days, Since: now.AddDate(0, 0, -days), Tools: map[string]int{}}
	if err := a.Fresh(ctx); err != nil {
		return in, err
	}
	db := a.ProjDB.Reader()
	all, err := sessions.List(ctx, db, 0)
	if err != nil {
		return in, err
	}
	var recent []sessions.Summary
	for _, s := range all {
		if !s.LastActive.Before(in.Since) {
			recent = append(recent, s)
		}
	}
	nodes, err := lineage.Dump(ctx, db)
	if err != nil {
		return in, err
	}
	convs, _ := conversations(recent, nodes)
	in.Conversations, in.Sessions = len(convs), len(recent)
	for _, c := range convs {
		in.Messages += c.Messages
	}
	since := in.Since.UTC().Format(time.DateOnly)
	price := knownPrices(a.Home).CallCost
	if in.ByModel, err = costs.Totals(ctx, db, "model", since, price); err != nil {
		return in, err
	}
	for _, r := range in.ByModel {
		in.Calls, in.Usage, in.Cost = in.Calls+r.Calls, in.Usage.Add(r.Usage), in.Cost+r.Cost
	}
	byDay, err := costs.Totals(ctx, db, "day", since, price)
	if err != nil {
		return in, err
	}
	for _, r := range byDay {
		if r.Cost > in.BusiestDayCost {
			in.BusiestDay, in.BusiestDayCost = r.Key, r.Cost
		}
	}
	// Tool calls are in each session's own events (a fork's copied
	// history is not counted again).
	for _, s := range recent {
		rs, err := a.Store.ReadStream(ctx, events.SessionStream(s.ID), events.Forward, 0, 0)
		if err != nil {
			return in, err
		}
		for _, r := range rs {
			if r.Type != schema.TypeAssistantMessageAdded || r.Time.Before(in.Since) {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return in, err
			}
			for _, tc := range p.(schema.AssistantMessageAdded).ToolCalls {
				in.Tools[tc.Function.Name]++
				in.ToolCalls++
			}
		}
	}
	return in, nil
}

// String is the summary as hermes insights and /insights print it.
func (in insights) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the last %d %s (since %s):\n", in.Days, plural(in.Days, "day", "days"), in.Since.Local().Format(time.DateOnly))
	if in.Sessions == 0 {
		b.WriteString("  no conversations")
		return b.String()
	}
	fmt.Fprintf(&b, "  conversations  %d (%d %s), %d messages\n", in.Conversations, in.Sessions, plural(in.Sessions, "session", "sessions"), in.Messages)
	fmt.Fprintf(&b, "  model calls    %d: %d prompt tokens (%d cached), %d completion tokens, $%.4f\n", in.Calls, in.Usage.PromptTokens,
		in.Usage.CacheReadTokens, in.Usage.CompletionTokens, in.Cost)
	var models []string
	for i, r := range in.ByModel {
		if i == 5 {
			models = append(models, fmt.Sprintf("%d more", len(in.ByModel)-i))
			break
		}
		models = append(models, fmt.Sprintf("%s %d calls $%.4f", first(r.Key, "(unnamed)"), r.Calls, r.Cost))
	}
	if len(models) > 0 {
		fmt.Fprintf(&b, "  by model       %s\n", strings.Join(models, " · "))
	}
	fmt.Fprintf(&b, "  tool calls     %d", in.ToolCalls)
	if in.ToolCalls > 0 {
		names := make([]string, 0, len(in.Tools))
		for n := range in.Tools {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if in.Tools[names[i]] != in.Tools[names[j]] {
				return in.Tools[names[i]] > in.Tools[names[j]]
			}
			return names[i] < names[j]
		})
		var top []string
		for i, n := range names {
			if i == 8 {
				top = append(top, fmt.Sprintf("%d more", len(names)-i))
				break
			}
			top = append(top, fmt.Sprintf("%s %d", n, in.Tools[n]))
		}
		b.WriteString(": " + strings.Join(top, ", "))
	}
	if in.BusiestDay != "" {
		fmt.Fprintf(&b, "\n  busiest day    %s ($%.4f)", in.BusiestDay, in.BusiestDayCost)
	}
	return b.String()
}
