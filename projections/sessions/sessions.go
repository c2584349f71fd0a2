// Package sessions is the session list read model: one row per session with
// what `hermes sessions list` shows, kept in the projections database.
package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Summary is one session as listed.
type Summary struct {
	ID         string       `json:"id"`
	Title      string       `json:"title"`
	Source     string       `json:"source"`
	Model      string       `json:"model"`
	Parent     string       `json:"parent,omitempty"`
	Reason     string       `json:"reason"`
	Status     string       `json:"status"`
	Started    time.Time    `json:"started"`
	LastActive time.Time    `json:"last_active"`
	Messages   int          `json:"messages"`
	Usage      schema.Usage `json:"usage"`
	CostUSD    float64      `json:"cost_usd"`
}

// Statuses a session can have.
const (
	StatusActive      = "active"
	StatusInterrupted = "interrupted"
	StatusCompressed  = "compressed"
	StatusEnded       = "ended"
)

// Model is the session list read model.
type Model struct {
	cache map[string]*Summary // rows read or changed in this process
	dirty map[string]bool
	gone  map[string]bool // erased in this batch
}

// NewModel returns the session list model.
func NewModel() *Model {
	return &Model{cache: map[string]*Summary{}, dirty: map[string]bool{}, gone: map[string]bool{}}
}

func (*Model) Name() string { return "sessions" }

// PayloadTypes are the events whose payloads the list reads; of the others
// it only looks at the type.
func (*Model) PayloadTypes() []string {
	return []string{schema.TypeSessionStarted, schema.TypeUserMessageAdded, schema.TypeAssistantMessageAdded, schema.TypeSessionTitled}
}
func (*Model) Version() int { return 2 }

func (*Model) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS sessions (
		id TEXT PRIMARY KEY, title TEXT NOT NULL, source TEXT NOT NULL, model TEXT NOT NULL,
		parent TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL,
		started_ns INTEGER NOT NULL, last_active_ns INTEGER NOT NULL, messages INTEGER NOT NULL,
		prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
		cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL) WITHOUT ROWID;
		CREATE INDEX IF NOT EXISTS sessions_last_active ON sessions (last_active_ns)`)
}

func (*Model) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS sessions`)
	return err
}

func (m *Model) Forget() {
	clear(m.cache)
	clear(m.dirty)
	clear(m.gone)
}

const cols = `id, title, source, model, parent, reason, status, started_ns, last_active_ns, messages,
	prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, cost_usd`

var upsert = projections.Upsert("sessions", "id", cols)

type scanner interface{ Scan(...any) error }

func scan(row scanner) (*Summary, error) {
	var s Summary
	var started, last int64
	err := row.Scan(&s.ID, &s.Title, &s.Source, &s.Model, &s.Parent, &s.Reason, &s.Status, &started, &last, &s.Messages,
		&s.Usage.PromptTokens, &s.Usage.CompletionTokens, &s.Usage.CacheReadTokens, &s.Usage.CacheWriteTokens, &s.CostUSD)
	if err != nil {
		return nil, err
	}
	s.Started, s.LastActive = time.Unix(0, started).UTC(), time.Unix(0, last).UTC()
	return &s, nil
}

// scanAll reads every row of a query of cols.
func scanAll(rows *sql.Rows, err error) ([]Summary, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	return out, rows.Err()
}

// row is session id's row, read on first use; first: the event is the
// session's first (revision 0), before which it has no row to read.
func (m *Model) row(tx *projections.Tx, id string, first bool) (*Summary, error) {
	if s, ok := m.cache[id]; ok {
		return s, nil
	}
	if first {
		s := &Summary{ID: id, Status: StatusActive}
		m.cache[id] = s
		return s, nil
	}
	s, err := scan(tx.QueryRow(`SELECT `+cols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		s, err = &Summary{ID: id, Status: StatusActive}, nil
	}
	if err != nil {
		return nil, err
	}
	m.cache[id] = s
	return s, nil
}

func (m *Model) Apply(tx *projections.Tx, ev projections.Event) error {
	// Only session streams make sessions: the gateway's chats and
	// pairings and the memory have streams of their own.
	id := events.SessionOf(ev.Stream)
	if id == "" {
		return nil
	}
	if ev.IsTombstone() {
		delete(m.cache, id)
		delete(m.dirty, id)
		m.gone[id] = true
		return nil
	}
	s, err := m.row(tx, id, ev.Revision == 0)
	if err != nil {
		return err
	}
	delete(m.gone, id)
	m.dirty[id] = true
	if s.Started.IsZero() {
		s.Started = ev.Time
	}
	s.LastActive = ev.Time
	switch ev.Type {
	case schema.TypeUserMessageAdded, schema.TypeAssistantMessageAdded, schema.TypeToolResultAdded:
		s.Messages++
	case schema.TypeTurnInterrupted:
		s.Status = StatusInterrupted
	case schema.TypeTurnCompleted:
		s.Status = StatusActive
	case schema.TypeContextCompressed:
		s.Status = StatusCompressed
	case schema.TypeSessionEnded:
		s.Status = StatusEnded
	}
	switch e := ev.Payload.(type) {
	case schema.SessionStarted:
		s.Source, s.Model, s.Parent, s.Reason = e.Source, e.Model, e.ParentSessionID, e.Reason
		s.Started, s.Messages, s.Status = ev.Time, len(e.History), StatusActive
	case schema.UserMessageAdded:
		s.Status = StatusActive
		if s.Title == "" {
			s.Title = autoTitle(e.Content)
		}
	case schema.AssistantMessageAdded:
		s.Usage = s.Usage.Add(e.Usage)
		s.CostUSD += e.CostUSD
		if e.Model != "" {
			s.Model = e.Model
		}
	case schema.SessionTitled:
		s.Title = e.Title
	}
	return nil
}

// autoTitle is the first line of the first user message, cut to 60 runes,
// until a SessionTitled event names the session.
func autoTitle(s string) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	rs := []rune(s)
	if len(rs) > 60 {
		return string(rs[:57]) + "..."
	}
	return s
}

func (m *Model) Flush(tx *projections.Tx) error {
	for id := range m.gone {
		if _, err := tx.Exec(`DELETE FROM sessions WHERE id = ?`, id); err != nil {
			return err
		}
	}
	clear(m.gone)
	if len(m.dirty) == 0 {
		return nil
	}
	rows, err := tx.Inserter(upsert)
	if err != nil {
		return err
	}
	for id := range m.dirty {
		s := m.cache[id]
		if err := rows.Add(s.ID, s.Title, s.Source, s.Model, s.Parent, s.Reason, s.Status, s.Started.UnixNano(), s.LastActive.UnixNano(),
			s.Messages, s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.CacheReadTokens, s.Usage.CacheWriteTokens, s.CostUSD); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	clear(m.dirty)
	return nil
}

// List returns sessions, most recently active first; limit <= 0 means all.
func List(ctx context.Context, db *projections.Reader, limit int) ([]Summary, error) {
	q := `SELECT ` + cols + ` FROM sessions ORDER BY last_active_ns DESC, id`
	var args []any
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	out, err := scanAll(db.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// Get returns one session; ok is false when it is unknown. An id prefix of
// at least 4 characters that names exactly one session also works.
func Get(ctx context.Context, db *projections.Reader, id string) (Summary, bool, error) {
	if !utf8.ValidString(id) {
		return Summary{}, false, nil // no id is such text
	}
	s, err := scan(db.QueryRowContext(ctx, `SELECT `+cols+` FROM sessions WHERE id = ?`, id))
	if err == nil {
		return *s, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Summary{}, false, err
	}
	if len(id) < 4 {
		return Summary{}, false, nil
	}
	q, args := `SELECT `+cols+` FROM sessions WHERE id >= ?`, []any{id}
	if bound, ok := projections.PrefixBound(id); ok {
		q, args = q+` AND id < ?`, append(args, bound)
	}
	found, err := scanAll(db.QueryContext(ctx, q+` ORDER BY id LIMIT 2`, args...))
	if err != nil {
		return Summary{}, false, err
	}
	if len(found) > 1 {
		return Summary{}, false, fmt.Errorf("session prefix %q is ambiguous (%s, %s, ...)", id, found[0].ID, found[1].ID)
	}
	if len(found) == 1 {
		return found[0], true, nil
	}
	return Summary{}, false, nil
}

// Dump is every session sorted by id, for comparing projections.
func Dump(ctx context.Context, db *projections.Reader) ([]Summary, error) {
	return scanAll(db.QueryContext(ctx, `SELECT `+cols+` FROM sessions ORDER BY id`))
}
