package history

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Model keeps every session's message history in the table history, as
// chunks: a row (session, first index, JSON array of messages) per session
// per applied batch. Index 0 is the system message; the conversation starts
// at 1. Chunks make a rebuild write a few rows per session instead of one
// per message; reading concatenates them in order.
type Model struct {
	// next is the next conversation index per session (cache; dropped by
	// Forget).
	next map[string]int
	// What Flush will write.
	system map[string][]byte
	chunks map[string]*chunk
	order  []string // sessions with a chunk, in first-touched order
	// resets are the sessions whose rows past index 0 Flush deletes
	// before writing their chunks: their history started over.
	resets []string
}

type chunk struct {
	first int
	msgs  [][]byte
}

// NewModel returns the history read model.
func NewModel() *Model {
	return &Model{next: map[string]int{}, system: map[string][]byte{}, chunks: map[string]*chunk{}}
}

func (*Model) Name() string { return "history" }
func (*Model) Version() int { return 2 }

// PayloadTypes are the events whose payloads change history.
func (*Model) PayloadTypes() []string {
	return []string{schema.TypeSessionStarted, schema.TypeSystemPromptBuilt, schema.TypeUserMessageAdded, schema.TypeAssistantMessageAdded, schema.TypeToolResultAdded}
}

func (*Model) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS history (
		session_id TEXT NOT NULL, first_idx INTEGER NOT NULL, messages BLOB NOT NULL,
		PRIMARY KEY (session_id, first_idx)) WITHOUT ROWID`)
}

func (*Model) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS history`)
	return err
}

func (m *Model) Forget() {
	clear(m.next)
	m.discard()
}

func (m *Model) discard() {
	clear(m.system)
	clear(m.chunks)
	m.order = m.order[:0]
	m.resets = m.resets[:0]
}

func (m *Model) nextIndex(tx *projections.Tx, sid string) (int, error) {
	if n, ok := m.next[sid]; ok {
		return n, nil
	}
	var first, n int
	length := `json_array_length(messages)`
	if tx.Postgres() {
		length = `json_array_length(convert_from(messages, 'UTF8')::json)`
	}
	err := tx.QueryRow(`SELECT first_idx, `+length+` FROM history
		WHERE session_id = ? ORDER BY first_idx DESC LIMIT 1`, sid).Scan(&first, &n)
	next := first + n
	if errors.Is(err, sql.ErrNoRows) {
		next, err = 1, nil
	}
	if err != nil {
		return 0, err
	}
	next = max(next, 1)
	m.next[sid] = next
	return next, nil
}

func (m *Model) add(sid string, idx int, msg schema.Message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c, ok := m.chunks[sid]
	if !ok {
		c = &chunk{first: idx}
		m.chunks[sid] = c
		m.order = append(m.order, sid)
	}
	c.msgs = append(c.msgs, b)
	m.next[sid] = idx + 1
	return nil
}

func (m *Model) Apply(tx *projections.Tx, ev projections.Event) error {
	sid := ev.SessionID
	if ev.IsTombstone() {
		if err := m.Flush(tx); err != nil {
			return err
		}
		delete(m.next, sid)
		_, err := tx.Exec(`DELETE FROM history WHERE session_id = ?`, sid)
		return err
	}
	if ev.Payload == nil {
		return nil
	}
	var t Transcript
	ch := t.Apply(ev.Payload)
	switch {
	case ch.Reset:
		// What was gathered for the session goes, and what it wrote
		// before goes in Flush (one statement for every session reset
		// in the batch); before the first event of the session's own
		// stream, there is nothing.
		if _, ok := m.chunks[sid]; ok {
			delete(m.chunks, sid)
			m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == sid })
		}
		first := ev.Revision == 0 && events.SessionOf(ev.Stream) == sid
		if !first && !slices.Contains(m.resets, sid) {
			m.resets = append(m.resets, sid)
		}
		m.next[sid] = 1
		for i, msg := range t.Messages {
			if err := m.add(sid, 1+i, msg); err != nil {
				return err
			}
		}
	case ch.System:
		b, err := json.Marshal([]schema.Message{{Role: "system", Content: t.System}})
		if err != nil {
			return err
		}
		m.system[sid] = b
	case ch.Appended > 0:
		n, err := m.nextIndex(tx, sid)
		if err != nil {
			return err
		}
		for i, msg := range t.Messages {
			if err := m.add(sid, n+i, msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetsPerStatement bounds the sessions of one DELETE in Flush.
const resetsPerStatement = 256

// Flush deletes the rows of the sessions whose history started over, and
// writes the gathered chunks and system messages.
func (m *Model) Flush(tx *projections.Tx) error {
	defer m.discard()
	if err := m.deleteResets(tx); err != nil {
		return err
	}
	if len(m.system)+len(m.order) == 0 {
		return nil
	}
	rows, err := tx.Inserter(upsert)
	if err != nil {
		return err
	}
	for sid, b := range m.system {
		if err := rows.Add(sid, 0, b); err != nil {
			return err
		}
	}
	for _, sid := range m.order {
		c := m.chunks[sid]
		// Each row its own array: the rows are sent together.
		var buf bytes.Buffer
		buf.WriteByte('[')
		buf.Write(bytes.Join(c.msgs, []byte{','}))
		buf.WriteByte(']')
		if err := rows.Add(sid, c.first, buf.Bytes()); err != nil {
			return err
		}
	}
	return rows.Close()
}

var upsert = projections.Upsert("history", "session_id, first_idx", "session_id, first_idx, messages")

// deleteResets deletes the rows past index 0 of the sessions reset in the
// batch: on PostgreSQL several sessions a statement (a power of two of
// them, so that a few statements serve every count), on SQLite, in the
// process, one prepared statement a session.
func (m *Model) deleteResets(tx *projections.Tx) error {
	const one = `DELETE FROM history WHERE session_id = ? AND first_idx > 0`
	for rs := m.resets; len(rs) > 0; {
		n := 1
		for tx.Postgres() && n*2 <= min(len(rs), resetsPerStatement) {
			n *= 2
		}
		q := one
		if n > 1 {
			q = `DELETE FROM history WHERE first_idx > 0 AND session_id IN (` + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + `)`
		}
		args := make([]any, n)
		for i, sid := range rs[:n] {
			args[i] = sid
		}
		if _, err := tx.Exec(q, args...); err != nil {
			return err
		}
		rs = rs[n:]
	}
	return nil
}

// Messages returns the history of a session as the next call would start
// from it (system message first), or nil for an unknown session.
func Messages(ctx context.Context, db *projections.Reader, sessionID string) ([]schema.Message, error) {
	all, err := query(ctx, db, `SELECT session_id, messages FROM history WHERE session_id = ? ORDER BY first_idx`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", sessionID, err)
	}
	return all[sessionID], nil
}

// Dump returns every session's history keyed by session id, for comparing a
// live projection with a rebuilt one.
func Dump(ctx context.Context, db *projections.Reader) (map[string][]schema.Message, error) {
	return query(ctx, db, `SELECT session_id, messages FROM history ORDER BY session_id, first_idx`)
}

func query(ctx context.Context, db *projections.Reader, q string, args ...any) (map[string][]schema.Message, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]schema.Message{}
	for rows.Next() {
		var sid string
		var b []byte
		var msgs []schema.Message
		if err := rows.Scan(&sid, &b); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &msgs); err != nil {
			return nil, fmt.Errorf("history of %s: %w", sid, err)
		}
		out[sid] = append(out[sid], msgs...)
	}
	for _, msgs := range out {
		InCallOrder(msgs)
	}
	return out, rows.Err()
}
