// Package importer converts the session database of the Python Hermes
// Agent (state.db: its sessions and messages tables) into events, so that
// people who switch keep their history searchable and resumable.
package importer

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Report says what an import did.
type Report struct {
	Sessions int
	Skipped  int // already imported
	Messages int
}

func columns(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s table: is this a Hermes state.db?", table)
	}
	return out, rows.Err()
}

// col selects name when the table has it, else a typed default, so that
// older and newer state.db versions import alike.
func col(have map[string]bool, name, def string) string {
	if have[name] {
		return "coalesce(" + name + ", " + def + ")"
	}
	return def
}

func at(ts float64) time.Time {
	sec, frac := math.Modf(ts)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

type session struct {
	id, source, model, system, parent, endReason, title, cwd string
	started, ended                                           float64
	in, out, cacheRead, cacheWrite                           int64
	cost                                                     float64
}

// HermesState imports every session of the state.db at path into store.
// A session already imported (its stream exists) is skipped.
func HermesState(ctx context.Context, path string, store events.Store) (Report, error) {
	var rep Report
	db, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(10000)"}}.Encode())
	if err != nil {
		return rep, err
	}
	defer db.Close()
	if _, err := os.Stat(path); err != nil {
		return rep, fmt.Errorf("import %s: %w", path, err)
	}
	sc, err := columns(ctx, db, "sessions")
	if err != nil {
		if strings.Contains(err.Error(), "not a database") {
			return rep, fmt.Errorf("%s is not a SQLite database: give the state.db of a Python Hermes Agent home (usually ~/.hermes/state.db)", path)
		}
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	mc, err := columns(ctx, db, "messages")
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	q := `SELECT id, ` + col(sc, "source", "'cli'") + `, ` + col(sc, "model", "''") + `, ` + col(sc, "system_prompt", "''") + `, ` +
		col(sc, "parent_session_id", "''") + `, ` + col(sc, "started_at", "0") + `, ` + col(sc, "ended_at", "0") + `, ` +
		col(sc, "end_reason", "''") + `, ` + col(sc, "title", "''") + `, ` + col(sc, "cwd", "''") + `, ` +
		col(sc, "input_tokens", "0") + `, ` + col(sc, "output_tokens", "0") + `, ` + col(sc, "cache_read_tokens", "0") + `, ` +
		col(sc, "cache_write_tokens", "0") + `, ` + col(sc, "estimated_cost_usd", "0") + ` FROM sessions ORDER BY ` + col(sc, "started_at", "0") + `, id`
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return rep, fmt.Errorf("%s: read sessions: %w", path, err)
	}
	var sessions []session
	for rows.Next() {
		var s session
		if err := rows.Scan(&s.id, &s.source, &s.model, &s.system, &s.parent, &s.started, &s.ended, &s.endReason, &s.title, &s.cwd,
			&s.in, &s.out, &s.cacheRead, &s.cacheWrite, &s.cost); err != nil {
			rows.Close()
			return rep, fmt.Errorf("%s: read sessions: %w", path, err)
		}
		sessions = append(sessions, s)
	}
	rows.Close()
	activeOnly := ""
	if mc["active"] {
		activeOnly = " AND active = 1"
	}
	mq := `SELECT role, ` + col(mc, "content", "''") + `, ` + col(mc, "tool_call_id", "''") + `, ` + col(mc, "tool_calls", "''") + `, ` +
		col(mc, "tool_name", "''") + `, ` + col(mc, "timestamp", "0") + `, ` + col(mc, "finish_reason", "''") + `, ` +
		col(mc, "reasoning", "''") + `, ` + col(mc, "reasoning_content", "''") +
		` FROM messages WHERE session_id = ?` + activeOnly + ` ORDER BY id`
	for _, s := range sessions {
		stream := events.SessionStream(s.id)
		existing, err := store.ReadStream(ctx, stream, events.Forward, 0, 1)
		if err != nil && !errors.Is(err, events.ErrStreamDeleted) {
			return rep, err
		}
		if len(existing) > 0 || errors.Is(err, events.ErrStreamDeleted) {
			rep.Skipped++
			continue
		}
		evs, n, err := convert(ctx, db, mq, s)
		if err != nil {
			return rep, fmt.Errorf("%s: session %s: %w", path, s.id, err)
		}
		if _, err := store.Append(ctx, stream, events.NoStream, evs...); err != nil {
			return rep, fmt.Errorf("import session %s: %w", s.id, err)
		}
		rep.Sessions++
		rep.Messages += n
	}
	return rep, nil
}

func convert(ctx context.Context, db *sql.DB, mq string, s session) ([]schema.Envelope, int, error) {
	var evs []schema.Envelope
	turn := ""
	cause := ""
	add := func(t time.Time, p schema.Payload) {
		e := schema.MustEnvelope(schema.Meta{SessionID: s.id, TurnID: turn, CausationID: cause, Time: t}, p)
		cause = e.ID
		evs = append(evs, e)
	}
	start := at(s.started)
	add(start, schema.SessionStarted{Source: s.source, Model: s.model, WorkingDir: s.cwd, ParentSessionID: s.parent, Reason: schema.StartImport})
	if strings.TrimSpace(s.system) != "" {
		add(start, schema.SystemPromptBuilt{Content: s.system})
	}
	if s.title != "" {
		add(start, schema.SessionTitled{Title: s.title})
	}
	rows, err := db.QueryContext(ctx, mq, s.id)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	n, lastAssistant := 0, -1
	var last time.Time = start
	closeTurn := func() {
		if turn != "" {
			add(last, schema.TurnCompleted{Outcome: "imported"})
			turn = ""
		}
	}
	for rows.Next() {
		var role, content, callID, calls, tool, finish, reasoning, reasoningContent string
		var ts float64
		if err := rows.Scan(&role, &content, &callID, &calls, &tool, &ts, &finish, &reasoning, &reasoningContent); err != nil {
			return nil, 0, err
		}
		t := at(ts)
		if ts == 0 {
			t = last
		}
		last = t
		switch role {
		case "user":
			closeTurn()
			turn = uuid.NewString()
			add(t, schema.UserMessageAdded{Content: content, Source: s.source})
		case "assistant":
			a := schema.AssistantMessageAdded{Content: content, Reasoning: firstOf(reasoning, reasoningContent), FinishReason: finish, Model: s.model}
			if strings.TrimSpace(calls) != "" && calls != "null" {
				if err := json.Unmarshal([]byte(calls), &a.ToolCalls); err != nil {
					return nil, 0, fmt.Errorf("tool_calls of a message at %s are not OpenAI-format JSON: %v", t.Format(time.RFC3339), err)
				}
				for i := range a.ToolCalls {
					if a.ToolCalls[i].Type == "" {
						a.ToolCalls[i].Type = "function"
					}
				}
			}
			add(t, a)
			lastAssistant = len(evs) - 1
		case "tool":
			add(t, schema.ToolResultAdded{CallID: callID, Name: tool, Content: content})
		default:
			continue // system and other roles: the prompt is imported from the session
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	closeTurn()
	// state.db keeps usage per session, not per call: the totals go on the
	// session's last answer, so costs and token counts add up.
	if lastAssistant >= 0 && (s.in+s.out+s.cacheRead+s.cacheWrite > 0 || s.cost > 0) {
		p, _ := schema.Decode(evs[lastAssistant])
		a := p.(schema.AssistantMessageAdded)
		a.Usage = schema.Usage{PromptTokens: s.in + s.cacheRead + s.cacheWrite, CompletionTokens: s.out, CacheReadTokens: s.cacheRead, CacheWriteTokens: s.cacheWrite}
		a.CostUSD = s.cost
		b, _ := json.Marshal(a)
		evs[lastAssistant].Payload = b
	}
	if s.ended > 0 {
		add(at(s.ended), schema.SessionEnded{Reason: firstOf(s.endReason, "ended")})
	}
	return evs, n, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
