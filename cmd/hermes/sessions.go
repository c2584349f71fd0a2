package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
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

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// findSession resolves an id or unique prefix to a listed session.
func findSession(ctx context.Context, a *app.App, id string) (sessions.Summary, error) {
	s, ok, err := sessions.Get(ctx, a.ProjDB.Reader(), id)
	if err != nil {
		return s, err
	}
	if !ok {
		if d, bad := a.Damaged(ctx, id); bad {
			return s, fmt.Errorf("session %s is damaged: event %s; `hermes store verify` shows the damage, `hermes store repair --quarantine` moves it aside",
				events.SessionOf(d.Stream), d)
		}
		return s, fmt.Errorf("no session %q: `hermes sessions list` shows the sessions there are", id)
	}
	return s, nil
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
