// Package lineage is the tree of sessions: compression children, forks and
// subagents, each under its parent, with the root of its tree.
package lineage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

const nodeCols = `id, parent, reason, root, depth, started_ns, goal`

var upsert = projections.Upsert("lineage", "id", nodeCols)

type scanner interface{ Scan(...any) error }

func scanNode(row scanner) (Node, error) {
	var n Node
	var ns int64
	err := row.Scan(&n.ID, &n.Parent, &n.Reason, &n.Root, &n.Depth, &ns, &n.Goal)
	n.Started = time.Unix(0, ns).UTC()
	return n, err
}

func scanNodes(rows *sql.Rows, err error) ([]Node, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Node is one session in a tree.
type Node struct {
	ID      string    `json:"id"`
	Parent  string    `json:"parent,omitempty"`
	Reason  string    `json:"reason"`
	Root    string    `json:"root"`
	Depth   int       `json:"depth"`
	Started time.Time `json:"started"`
	Goal    string    `json:"goal,omitempty"`
}

// Model is the lineage read model.
type Model struct {
	cache map[string]Node
	// pending are the nodes Flush writes, in the order they came.
	pending []Node
}

// NewModel returns the lineage model.
func NewModel() *Model { return &Model{cache: map[string]Node{}} }

func (*Model) Name() string { return "lineage" }
func (*Model) Version() int { return 1 }

// PayloadTypes implements projections.Selective.
func (*Model) PayloadTypes() []string { return []string{schema.TypeSessionStarted} }

func (*Model) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS lineage (
		id TEXT PRIMARY KEY, parent TEXT NOT NULL, reason TEXT NOT NULL, root TEXT NOT NULL,
		depth INTEGER NOT NULL, started_ns INTEGER NOT NULL, goal TEXT NOT NULL) WITHOUT ROWID;
		CREATE INDEX IF NOT EXISTS lineage_root ON lineage (root)`)
}

func (*Model) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS lineage`)
	return err
}

func (m *Model) Forget() {
	clear(m.cache)
	m.pending = m.pending[:0]
}

func (m *Model) node(tx *projections.Tx, id string) (Node, bool, error) {
	if n, ok := m.cache[id]; ok {
		return n, true, nil
	}
	n, err := scanNode(tx.QueryRow(`SELECT `+nodeCols+` FROM lineage WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return n, false, nil
	}
	if err != nil {
		return n, false, err
	}
	m.cache[id] = n
	return n, true, nil
}

func (m *Model) Apply(tx *projections.Tx, ev projections.Event) error {
	if ev.IsTombstone() {
		delete(m.cache, ev.SessionID)
		m.pending = slices.DeleteFunc(m.pending, func(n Node) bool { return n.ID == ev.SessionID })
		// Children keep their place: their parent link names an erased
		// session, and they stay in the tree of the same root.
		_, err := tx.Exec(`DELETE FROM lineage WHERE id = ?`, ev.SessionID)
		return err
	}
	s, ok := ev.Payload.(schema.SessionStarted)
	if !ok {
		return nil
	}
	n := Node{ID: ev.SessionID, Parent: s.ParentSessionID, Reason: s.Reason, Root: ev.SessionID, Started: ev.Time, Goal: s.Goal}
	if s.ParentSessionID != "" {
		p, found, err := m.node(tx, s.ParentSessionID)
		if err != nil {
			return err
		}
		n.Root, n.Depth = s.ParentSessionID, 1
		if found {
			n.Root, n.Depth = p.Root, p.Depth+1
		}
	}
	m.cache[n.ID] = n
	// Written in Flush, with the batch's other sessions: a parent started
	// in the same batch is found in the cache.
	m.pending = slices.DeleteFunc(m.pending, func(p Node) bool { return p.ID == n.ID })
	m.pending = append(m.pending, n)
	return nil
}

// Flush writes the nodes of the batch.
func (m *Model) Flush(tx *projections.Tx) error {
	if len(m.pending) == 0 {
		return nil
	}
	defer func() { m.pending = m.pending[:0] }()
	rows, err := tx.Inserter(upsert)
	if err != nil {
		return err
	}
	for _, n := range m.pending {
		if err := rows.Add(n.ID, n.Parent, n.Reason, n.Root, n.Depth, n.Started.UnixNano(), n.Goal); err != nil {
			return err
		}
	}
	return rows.Close()
}

// Tree returns every node of the tree holding id, root first, each
// parent before its children (by depth, then start time).
func Tree(ctx context.Context, db *projections.Reader, id string) ([]Node, error) {
	var root string
	err := db.QueryRowContext(ctx, `SELECT root FROM lineage WHERE id = ?`, id).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no session %s in the lineage", id)
	}
	if err != nil {
		return nil, err
	}
	return scanNodes(db.QueryContext(ctx, `SELECT `+nodeCols+` FROM lineage WHERE root = ? OR id = ? ORDER BY depth, started_ns, id`, root, root))
}

// Chain returns the conversation id belongs to: its ancestors from the
// root, id itself, and the compression children that continued it.
func Chain(ctx context.Context, db *projections.Reader, id string) ([]Node, error) {
	up, err := ancestors(ctx, db, id)
	if err != nil {
		return nil, err
	}
	for cur := id; len(up) < 10000; {
		n, err := scanNode(db.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM lineage
			WHERE parent = ? AND reason = 'compression' ORDER BY started_ns DESC LIMIT 1`, cur))
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		up = append(up, n)
		cur = n.ID
	}
	return up, nil
}

// ancestors returns the sessions from the root down to id.
func ancestors(ctx context.Context, db *projections.Reader, id string) ([]Node, error) {
	var out []Node
	for cur := id; cur != ""; {
		n, err := scanNode(db.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM lineage WHERE id = ?`, cur))
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append([]Node{n}, out...)
		cur = n.Parent
		if len(out) > 10000 {
			return nil, errors.New("lineage loop")
		}
	}
	return out, nil
}

// Dump is every node sorted by id.
func Dump(ctx context.Context, db *projections.Reader) ([]Node, error) {
	return scanNodes(db.QueryContext(ctx, `SELECT `+nodeCols+` FROM lineage ORDER BY id`))
}
