// Package sessionsearch is the session_search tool: the model searches the
// full-text history of every session, as `hermes search` does.
package sessionsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/projections/search"
)

// Tool is session_search.
type Tool struct {
	Search func(ctx context.Context, q search.Query) (search.Results, error)
	// Summarize, when set, condenses results longer than SummarizeOver
	// characters (the auxiliary model, as Hermes does); on failure the
	// results are returned cut instead.
	Summarize     func(ctx context.Context, query, results string) (string, error)
	SummarizeOver int
}

func (Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "session_search", Description: `Search past conversations (yours and the user's, every session). Query syntax: words (every word must match; put OR between alternatives), "exact phrases", prefix*, fuzzy~, -excluded, and field filters such as source:telegram or role:user.`,
		Parameters: map[string]any{"type": "object", "required": []string{"query"}, "properties": map[string]any{
			"query": map[string]any{"type": "string"},
			"limit": map[string]any{"type": "integer", "description": "sessions to return (default 5)"},
			"since": map[string]any{"type": "string", "description": "only messages on or after this day, YYYY-MM-DD"},
			"until": map[string]any{"type": "string", "description": "only messages on or before this day, YYYY-MM-DD"},
		}}}
}
func (Tool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

func (t Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
		Since string `json:"since"`
		Until string `json:"until"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if strings.TrimSpace(a.Query) == "" {
		return "", errors.New("query is empty")
	}
	q := search.Query{Text: a.Query, Limit: a.Limit}
	if q.Limit <= 0 {
		q.Limit = 5
	}
	if a.Since != "" {
		s, err := time.Parse("2006-01-02", a.Since)
		if err != nil {
			return "", fmt.Errorf("since %q: use YYYY-MM-DD", a.Since)
		}
		q.Since = s
	}
	if a.Until != "" {
		u, err := time.Parse("2006-01-02", a.Until)
		if err != nil {
			return "", fmt.Errorf("until %q: use YYYY-MM-DD", a.Until)
		}
		q.Until = u
	}
	res, err := t.Search(ctx, q)
	if err != nil {
		return "", err
	}
	if len(res.Hits) == 0 {
		return "no matches", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching messages in %d sessions:\n", res.Total, len(res.Hits))
	for _, h := range res.Hits {
		snippet := strings.NewReplacer(search.HighlightOn, "", search.HighlightOff, "", "\n", " ").Replace(h.Snippet)
		if r := []rune(snippet); len(r) > 400 {
			snippet = string(r[:400]) + "…"
		}
		fmt.Fprintf(&b, "- session %s (%s, %s, %d matches): %s\n", h.Session, h.Time.Format("2006-01-02"), h.Source, h.Matches, snippet)
	}
	out := b.String()
	over := t.SummarizeOver
	if over <= 0 {
		over = 3000
	}
	if len(out) > over && t.Summarize != nil {
		if sum, err := t.Summarize(ctx, a.Query, out); err == nil && strings.TrimSpace(sum) != "" {
			return fmt.Sprintf("Summary of %d matching messages in %d sessions:\n%s", res.Total, len(res.Hits), sum), nil
		}
		out = out[:over] + "\n[… results cut]"
	}
	return out, nil
}

// SummaryPrompt asks the auxiliary model to condense search results.
const SummaryPrompt = "You condense search results over past conversations for an AI agent. Keep what bears on the query: which session (keep the ids), when, what was said or decided. Be brief and factual; do not invent anything."
