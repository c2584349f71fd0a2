package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/adapters/tools/skills"
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
		Short: "What the agent learned and did over the last days: skills written and used, memories, conversations, model and tool calls, cost",
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
	// Learned is what the agent learned: see learning.
	Learned learning
}

// learning is what the agent learned and used over the period, from the
// skills' streams, the memory stream and the sessions' events.
type learning struct {
	// SkillChanges counts the skills' new versions by what made them
	// (session, review, curator, hub, person, adopted from disk), and
	// Written names the skills changed.
	SkillChanges map[string]int
	Written      []string
	// SkillUses counts each skill's uses: skill_view calls and loads by
	// /<skill-name>.
	SkillUses map[string]int
	// Memory counts the memory changes by action (add, replace, remove),
	// the agent's and those approved; MemoryAdded are the entries added.
	Memory      map[string]int
	MemoryAdded []string
	// Waiting are the memory changes staged for review, undecided.
	Waiting int
}

// insightsOf sums up the days before now.
func insightsOf(ctx context.Context, a *app.App, days int, now time.Time) (insights, error) {
	in := insights{Days: days, Since: now.AddDate(0, 0, -days), Tools: map[string]int{}}
	in.Learned = learning{SkillChanges: map[string]int{}, SkillUses: map[string]int{}, Memory: map[string]int{}}
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
			if (r.Type != schema.TypeAssistantMessageAdded && r.Type != schema.TypeUserMessageAdded) || r.Time.Before(in.Since) {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return in, err
			}
			if u, ok := p.(schema.UserMessageAdded); ok {
				for _, n := range u.Skills {
					in.Learned.SkillUses[n]++
				}
				continue
			}
			for _, tc := range p.(schema.AssistantMessageAdded).ToolCalls {
				in.Tools[tc.Function.Name]++
				in.ToolCalls++
				var args struct{ Name string }
				if tc.Function.Name == "skill_view" && json.Unmarshal([]byte(tc.Function.Arguments), &args) == nil && args.Name != "" {
					in.Learned.SkillUses[args.Name]++
				}
			}
		}
	}
	return in, in.Learned.read(ctx, a, in.Since)
}

// read gathers the skills' new versions and the memory changes since.
func (l *learning) read(ctx context.Context, a *app.App, since time.Time) error {
	for _, name := range skillsKeeper(a).Names() {
		hist, _, err := skills.History(ctx, a.Store, name)
		if err != nil {
			return err
		}
		changed := false
		for _, v := range hist {
			if v.Time.Before(since) {
				continue
			}
			l.SkillChanges[first(v.Author.Kind, "unknown")]++
			changed = true
		}
		if changed {
			l.Written = append(l.Written, name)
		}
	}
	rs, err := a.Store.ReadStream(ctx, memory.Stream, events.Forward, 0, 0)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Type != schema.TypeMemoryUpdated || r.Time.Before(since) {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return err
		}
		m := p.(schema.MemoryUpdated)
		if m.Source != "" && !strings.HasPrefix(m.Source, "approved by ") {
			continue // adopted from disk, imported, a reset: not learned
		}
		l.Memory[m.Action]++
		if m.Action == "add" {
			l.MemoryAdded = append(l.MemoryAdded, m.Entry)
		}
	}
	waiting, err := memory.Pending(ctx, a.Store)
	l.Waiting = len(waiting)
	return err
}

// String is the learning lines of insights.
func (l learning) String() string {
	var b strings.Builder
	var kinds []string
	total := 0
	for k, n := range l.SkillChanges {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "  skills written %d versions of %d skills", total, len(l.Written))
	if total > 0 {
		fmt.Fprintf(&b, " (by %s): %s", strings.Join(kinds, ", "), clip(strings.Join(l.Written, ", "), 120))
	}
	uses := 0
	names := make([]string, 0, len(l.SkillUses))
	for n, u := range l.SkillUses {
		names = append(names, n)
		uses += u
	}
	sort.Slice(names, func(i, j int) bool {
		if l.SkillUses[names[i]] != l.SkillUses[names[j]] {
			return l.SkillUses[names[i]] > l.SkillUses[names[j]]
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(&b, "\n  skills used    %d", uses)
	if uses > 0 {
		var top []string
		for i, n := range names {
			if i == 8 {
				top = append(top, fmt.Sprintf("%d more", len(names)-i))
				break
			}
			top = append(top, fmt.Sprintf("%s %d", n, l.SkillUses[n]))
		}
		b.WriteString(": " + strings.Join(top, ", "))
	}
	fmt.Fprintf(&b, "\n  memories       %d added, %d replaced, %d removed", l.Memory["add"], l.Memory["replace"], l.Memory["remove"])
	if l.Waiting > 0 {
		fmt.Fprintf(&b, "; %d waiting for review (/memory)", l.Waiting)
	}
	for i, e := range l.MemoryAdded {
		if i == 5 {
			fmt.Fprintf(&b, "\n    … and %d more", len(l.MemoryAdded)-i)
			break
		}
		fmt.Fprintf(&b, "\n    + %s", clip(strings.ReplaceAll(e, "\n", " "), 100))
	}
	return b.String()
}

// String is the summary as hermes insights and /insights print it.
func (in insights) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the last %d %s (since %s):\n", in.Days, plural(in.Days, "day", "days"), in.Since.Local().Format(time.DateOnly))
	if in.Sessions == 0 {
		b.WriteString("  no conversations\n")
		b.WriteString(in.Learned.String())
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
	b.WriteString("\n" + in.Learned.String())
	return b.String()
}
