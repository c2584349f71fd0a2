package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// sessionsShowOptions are the flags and arguments of `hermes sessions show`.
type sessionsShowOptions struct {
	app                 *app.Factory
	io                  app.IOStreams
	id                  string
	asJSON, withLineage bool
}

func sessionsShow(g *app.Factory) *cobra.Command {
	opts := &sessionsShowOptions{app: g}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's history as the next model call would start from it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print the OpenAI-format message list as JSON")
	cmd.Flags().BoolVar(&opts.withLineage, "lineage", false, "show the history of the whole chain, from the first session of the lineage")
	return cmd
}

// runSessionsShow runs `hermes sessions show`.
func runSessionsShow(ctx context.Context, opts *sessionsShowOptions) error {
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		if opts.withLineage {
			return showLineage(ctx, opts.io.Out, a, s.ID)
		}
		msgs, err := history.Messages(ctx, a.ProjDB.Reader(), s.ID)
		if err != nil {
			return err
		}
		out := opts.io.Out
		if opts.asJSON {
			return writeJSON(out, nextCall(msgs))
		}
		fmt.Fprintf(out, "session %s  %q\n", s.ID, s.Title)
		fmt.Fprintf(out, "source %s  model %s  status %s  started %s\n", s.Source, s.Model, s.Status, s.Started.Local().Format(time.DateTime))
		if s.Parent != "" {
			fmt.Fprintf(out, "parent %s (%s)\n", s.Parent, s.Reason)
		}
		bill, err := sessionBill(ctx, a.Store, s.ID, knownPrices(a.Home))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "messages %d  tokens in %d out %d cache read %d write %d  cost %s\n", s.Messages,
			s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.CacheReadTokens, s.Usage.CacheWriteTokens, bill.CostText())
		if u := bill.Unknown(); u != "" {
			fmt.Fprintf(out, "unknown cost: %s\n", u)
		}
		fmt.Fprintln(out)
		for _, m := range msgs {
			printMessage(out, m)
		}
		return nil
	})
}

func printMessage(w io.Writer, m schema.Message) {
	head := strings.ToUpper(m.Role)
	if m.Role == "tool" {
		head = fmt.Sprintf("TOOL %s (%s)", m.Name, m.ToolCallID)
	}
	fmt.Fprintf(w, "── %s\n", head)
	if m.Reasoning != "" {
		fmt.Fprintf(w, "   (thinking) %s\n", clip(m.Reasoning, 400))
	}
	if m.Content != "" {
		fmt.Fprintln(w, m.Content)
	}
	for _, im := range m.Images {
		fmt.Fprintf(w, "   [image %s: %s, %d bytes, sha256 %s]\n", im.Name, im.MediaType, im.Size, im.SHA256[:min(12, len(im.SHA256))])
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(w, "   → %s(%s) [%s]\n", tc.Function.Name, tc.Function.Arguments, tc.ID)
	}
}

// sessionBill prices the model calls of session id (its own, not its
// lineage's) from its events at prices: the cost each call recorded, or
// its token usage at prices for the calls made when their model had no
// price; calls with no price yet stay unknown.
func sessionBill(ctx context.Context, store events.Store, id string, prices model.Prices) (model.Bill, error) {
	var b model.Bill
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return b, err
	}
	for _, r := range rs {
		if r.Type != schema.TypeAssistantMessageAdded && r.Type != schema.TypeAuxiliaryCallCompleted {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return b, err
		}
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			b.Add(prices, e.Model, e.Usage, e.CostUSD, e.Calls)
		case schema.AuxiliaryCallCompleted:
			b.Add(prices, e.Model, e.Usage, e.CostUSD, 1)
		}
	}
	return b, nil
}
