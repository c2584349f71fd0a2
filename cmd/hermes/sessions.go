package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

func sessionsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List and inspect sessions"}
	cmd.AddCommand(sessionsList(g), sessionsShow(g), sessionsEvents(g), sessionsDelete(g), sessionsTree(g),
		sessionsReplay(g), sessionsFork(g), sessionsExport(g), sessionsImport(g), sessionsRename(g))
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

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

func sessionsList(g *app.Factory) *cobra.Command {
	var asJSON, all bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := cmd.Context()
			if err := a.Fresh(ctx); err != nil {
				return err
			}
			list, err := sessions.List(ctx, a.ProjDB.Reader(), 0)
			if err != nil {
				return err
			}
			hidden := 0
			if !all {
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
			if limit > 0 && len(list) > limit {
				list = list[:limit]
			}
			out := cmd.OutOrStdout()
			if asJSON {
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
					fmt.Fprintf(cmd.ErrOrStderr(), "(%d empty or subagent sessions not shown: --all shows them)\n", hidden)
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most N sessions (0: all)")
	cmd.Flags().BoolVar(&all, "all", false, "also show subagent sessions and sessions without messages")
	return cmd
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// findSession resolves an id or unique prefix to a listed session.
func findSession(cmd *cobra.Command, a *app.App, id string) (sessions.Summary, error) {
	s, ok, err := sessions.Get(cmd.Context(), a.ProjDB.Reader(), id)
	if err != nil {
		return s, err
	}
	if !ok {
		if d, bad := a.Damaged(cmd.Context(), id); bad {
			return s, fmt.Errorf("session %s is damaged: event %s; `hermes store verify` shows the damage, `hermes store repair --quarantine` moves it aside",
				events.SessionOf(d.Stream), d)
		}
		return s, fmt.Errorf("no session %q: `hermes sessions list` shows the sessions there are", id)
	}
	return s, nil
}

func sessionsShow(g *app.Factory) *cobra.Command {
	var asJSON, withLineage bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's history as the next model call would start from it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				if withLineage {
					return showLineage(cmd, a, s.ID)
				}
				msgs, err := history.Messages(ctx, a.ProjDB.Reader(), s.ID)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the OpenAI-format message list as JSON")
	cmd.Flags().BoolVar(&withLineage, "lineage", false, "show the history of the whole chain, from the first session of the lineage")
	return cmd
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

func sessionsEvents(g *app.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's raw events (--json: one JSON object per line)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := cmd.Context()
			id := args[0]
			// The raw log needs no projection, except to resolve a prefix.
			rs, err := a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
			if err == nil && len(rs) == 0 {
				if err := a.Fresh(ctx); err != nil {
					return err
				}
				s, ferr := findSession(cmd, a, id)
				if ferr != nil {
					return ferr
				}
				rs, err = a.Store.ReadStream(ctx, events.SessionStream(s.ID), events.Forward, 0, 0)
			}
			if errors.Is(err, events.ErrStreamDeleted) {
				return fmt.Errorf("session %s was deleted", id)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			if !asJSON {
				fmt.Fprintf(out, "%6s  %4s  %-23s  %-22s %s  %s  %s\n", "POS", "REV", "TIME", "TYPE", "VER", "TURN", "PAYLOAD")
			}
			for _, r := range rs {
				if asJSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%6d  %4d  %s  %-22s v%d  turn=%s  %s\n", r.Position, r.Revision, r.Time.Local().Format("2006-01-02 15:04:05.000"),
					r.Type, r.Version, r.TurnID, clip(string(r.Payload), 120))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}

func sessionsDelete(g *app.Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Erase a session: its events are deleted and every read model drops it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				if f, ok := cmd.InOrStdin().(*os.File); !yes && ok && isatty.IsTerminal(f.Fd()) {
					fmt.Fprintf(cmd.ErrOrStderr(), "Erase session %s %q (%d messages)? Its events are deleted for good. [y/N] ", s.ID, s.Title, s.Messages)
					line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
					if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
						return errors.New("not deleted")
					}
				}
				// A session another process runs is not pulled from under it.
				lease, err := a.Leases(session.ThisProcess()).Lease(s.ID)
				if err != nil {
					return err
				}
				defer lease.Release()
				if err := a.Store.DeleteStream(ctx, events.SessionStream(s.ID), events.Any); err != nil {
					return err
				}
				if err := a.Fresh(ctx); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted session %s\n", s.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// nextCall is the history exactly as the next model call sends it, before
// ephemeral layers: the system message, then the conversation repaired
// (alternation, closed tool calls) as the loop repairs it.
func nextCall(msgs []schema.Message) []schema.Message {
	out := []schema.Message{}
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out = append(out, msgs[0])
		msgs = msgs[1:]
	}
	return append(out, agent.RepairHistory(msgs)...)
}
