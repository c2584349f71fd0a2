package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hermes-go/hermes/events/embedded"
)

// DB is the SQLite file ($HERMES_HOME/projections.db) that holds the
// table-backed read models and their checkpoints. Like the event store it
// may be open in several processes at once. Its commits skip the fsync the
// event store pays for: a power cut can lose the last batches, but a state
// and its checkpoint always move together, so the runner just re-applies
// them from the log.
type DB struct {
	path string
	w    *sql.DB // one connection; transactions take the write lock
	r    *sql.DB
}

// OpenDB opens (creating if needed) the projections database at path.
func OpenDB(path string) (*DB, error) {
	w, err := embedded.OpenSQLite(path, true, false)
	if err != nil {
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	r, err := embedded.OpenSQLite(path, false, false)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	if _, err := w.Exec(`CREATE TABLE IF NOT EXISTS checkpoints (
		name TEXT PRIMARY KEY, position INTEGER NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID`); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	return &DB{path: path, w: w, r: r}, nil
}

// Reader is the read-only handle queries use.
func (d *DB) Reader() *sql.DB { return d.r }

// Close closes the database.
func (d *DB) Close() error { return errors.Join(d.w.Close(), d.r.Close()) }

// Model is a read model kept in tables of the projections database.
type Model interface {
	// Name identifies the model.
	Name() string
	// Version is the shape of its tables; a stored model of another
	// version is dropped and rebuilt.
	Version() int
	// Create makes the model's tables (IF NOT EXISTS).
	Create(tx *sql.Tx) error
	// Drop removes the model's tables.
	Drop(tx *sql.Tx) error
	// Apply applies one event inside the batch's transaction.
	Apply(tx *sql.Tx, ev Event) error
	// Flush writes what Apply gathered in memory, at the end of a batch.
	Flush(tx *sql.Tx) error
	// Forget drops in-memory caches: another process moved the model, or a
	// transaction was rolled back.
	Forget()
}

// Projection adapts a Model into a Projection stored in d. A Model that
// implements Selective makes the projection selective too.
func (d *DB) Projection(m Model) Projection {
	p := &tableProjection{db: d, m: m}
	if sel, ok := m.(Selective); ok {
		return selectiveProjection{p, sel}
	}
	return p
}

type selectiveProjection struct {
	*tableProjection
	Selective
}

type tableProjection struct {
	db    *DB
	m     Model
	ready bool
	// mine is the checkpoint this process last wrote; a different stored
	// value means another process applied events, so caches are stale.
	mine uint64
}

func (p *tableProjection) Name() string { return p.m.Name() }

// prepare creates the tables and rebuilds a model stored at another version.
func (p *tableProjection) prepare(tx *sql.Tx) (uint64, error) {
	var pos uint64
	var version int
	err := tx.QueryRow(`SELECT position, version FROM checkpoints WHERE name = ?`, p.m.Name()).Scan(&pos, &version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := p.m.Create(tx); err != nil {
			return 0, err
		}
		_, err = tx.Exec(`INSERT INTO checkpoints (name, position, version) VALUES (?, 0, ?)`, p.m.Name(), p.m.Version())
		return 0, err
	case err != nil:
		return 0, err
	case version != p.m.Version():
		p.m.Forget()
		if err := p.m.Drop(tx); err != nil {
			return 0, err
		}
		if err := p.m.Create(tx); err != nil {
			return 0, err
		}
		_, err = tx.Exec(`UPDATE checkpoints SET position = 0, version = ? WHERE name = ?`, p.m.Version(), p.m.Name())
		return 0, err
	}
	return pos, nil
}

func (p *tableProjection) write(ctx context.Context, fn func(tx *sql.Tx, cp uint64) (uint64, error)) error {
	tx, err := p.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", p.db.path, err)
	}
	cp, err := p.prepare(tx)
	if err == nil {
		if cp != p.mine {
			p.m.Forget()
		}
		cp, err = fn(tx, cp)
	}
	if err == nil {
		_, err = tx.Exec(`UPDATE checkpoints SET position = ? WHERE name = ?`, cp, p.m.Name())
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback()
		p.m.Forget()
		return err
	}
	p.mine = cp
	return nil
}

func (p *tableProjection) Checkpoint(ctx context.Context) (uint64, error) {
	if !p.ready {
		// The first call makes sure the tables exist at the right version.
		if err := p.write(ctx, func(_ *sql.Tx, cp uint64) (uint64, error) { return cp, nil }); err != nil {
			return 0, err
		}
		p.ready = true
	}
	var pos uint64
	err := p.db.r.QueryRowContext(ctx, `SELECT position FROM checkpoints WHERE name = ?`, p.m.Name()).Scan(&pos)
	return pos, err
}

func (p *tableProjection) Apply(ctx context.Context, batch []Event) error {
	return p.write(ctx, func(tx *sql.Tx, cp uint64) (uint64, error) {
		for _, ev := range batch {
			if ev.Position <= cp {
				continue
			}
			if err := p.m.Apply(tx, ev); err != nil {
				return 0, fmt.Errorf("event %s@%d (position %d): %w", ev.Stream, ev.Revision, ev.Position, err)
			}
			cp = ev.Position
		}
		return cp, p.m.Flush(tx)
	})
}

func (p *tableProjection) Reset(ctx context.Context) error {
	return p.write(ctx, func(tx *sql.Tx, _ uint64) (uint64, error) {
		p.m.Forget()
		if err := p.m.Drop(tx); err != nil {
			return 0, err
		}
		return 0, p.m.Create(tx)
	})
}
