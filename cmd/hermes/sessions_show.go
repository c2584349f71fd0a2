package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
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
		fmt.Fprintf(out, "messages %d  tokens in %d out %d cache read %d write %d  cost $%.4f\n\n", s.Messages,
			s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.CacheReadTokens, s.Usage.CacheWriteTokens, s.CostUSD)
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
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(w, "   → %s(%s) [%s]\n", tc.Function.Name, tc.Function.Arguments, tc.ID)
	}
}
