package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Model keeps every session's message history in the table history:
// row 0 holds the system message, rows 1.. the conversation. It only ever
// appends, except when a session starts over from a carried history or is
// erased.
type Model struct {
	// next is the next conversation row per session seen in this batch or
	// earlier ones (cache; dropped by Forget).
	next map[string]int
}

// NewModel returns the history read model.
func NewModel() *Model { return &Model{next: map[string]int{}} }

func (*Model) Name() string { return "history" }
func (*Model) Version() int { return 1 }

func (*Model) Create(tx *sql.Tx) error {
	_, err := tx.Exec(`CREATE TABLE IF NOT EXISTS history (
		session_id TEXT NOT NULL, idx INTEGER NOT NULL, message BLOB NOT NULL,
		PRIMARY KEY (session_id, idx)) WITHOUT ROWID`)
	return err
}

func (*Model) Drop(tx *sql.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS history`)
	return err
}

func (m *Model) Forget() { clear(m.next) }

func (m *Model) nextRow(tx *sql.Tx, sid string) (int, error) {
	if n, ok := m.next[sid]; ok {
		return n, nil
	}
	var last sql.NullInt64
	if err := tx.QueryRow(`SELECT max(idx) FROM history WHERE session_id = ?`, sid).Scan(&last); err != nil {
		return 0, err
	}
	n := 1
	if last.Valid && last.Int64 >= 1 {
		n = int(last.Int64) + 1
	}
	m.next[sid] = n
	return n, nil
}

func put(tx *sql.Tx, sid string, idx int, msg schema.Message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT OR REPLACE INTO history (session_id, idx, message) VALUES (?, ?, ?)`, sid, idx, b)
	return err
}

func (m *Model) Apply(tx *sql.Tx, ev projections.Event) error {
	sid := ev.SessionID
	if ev.IsTombstone() {
		delete(m.next, sid)
		_, err := tx.Exec(`DELETE FROM history WHERE session_id = ?`, sid)
		return err
	}
	var t Transcript
	ch := t.Apply(ev.Payload)
	switch {
	case ch.Reset:
		if _, err := tx.Exec(`DELETE FROM history WHERE session_id = ? AND idx > 0`, sid); err != nil {
			return err
		}
		for i, msg := range t.Messages {
			if err := put(tx, sid, i+1, msg); err != nil {
				return err
			}
		}
		m.next[sid] = len(t.Messages) + 1
	case ch.System:
		return put(tx, sid, 0, schema.Message{Role: "system", Content: t.System})
	case ch.Appended > 0:
		n, err := m.nextRow(tx, sid)
		if err != nil {
			return err
		}
		for i, msg := range t.Messages {
			if err := put(tx, sid, n+i, msg); err != nil {
				return err
			}
		}
		m.next[sid] = n + len(t.Messages)
	}
	return nil
}

func (*Model) Flush(*sql.Tx) error { return nil }

// Messages returns the history of a session as the next call would start
// from it (system message first), or nil for an unknown session.
func Messages(ctx context.Context, db *sql.DB, sessionID string) ([]schema.Message, error) {
	rows, err := db.QueryContext(ctx, `SELECT message FROM history WHERE session_id = ? ORDER BY idx`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []schema.Message
	for rows.Next() {
		var b []byte
		var msg schema.Message
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, fmt.Errorf("history of %s: %w", sessionID, err)
		}
		out = append(out, msg)
	}
	return out, rows.Err()
}

// Dump returns every session's history keyed by session id, for comparing a
// live projection with a rebuilt one.
func Dump(ctx context.Context, db *sql.DB) (map[string][]schema.Message, error) {
	rows, err := db.QueryContext(ctx, `SELECT session_id, message FROM history ORDER BY session_id, idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]schema.Message{}
	for rows.Next() {
		var sid string
		var b []byte
		var msg schema.Message
		if err := rows.Scan(&sid, &b); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, err
		}
		out[sid] = append(out[sid], msg)
	}
	return out, rows.Err()
}
