package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-go/hermes/internal/sqlite"
)

// DB is the database that holds the table-backed read models and their
// checkpoints: a home's SQLite file ($HERMES_HOME/projections.db), or, with
// a PostgreSQL event store, schema hermes_projections of that database,
// shared by every process of the cluster (see OpenPostgres). Either may be
// open in several processes at once. SQLite's commits skip the fsync the
// event store pays for: a power cut can lose the last batches, but a state
// and its checkpoint always move together, so the runner just re-applies
// them from the log.
type DB struct {
	name string // the file, or the server's URL without its password
	kind dialect
	w    *sql.DB // SQLite: one connection; transactions take the write lock
	r    *sql.DB // the same pool as w on PostgreSQL
	b    *binder
	rd   *Reader
	// stmts are the writer's prepared statements (SQLite only).
	stmts *stmts
	// scratch is the directory of a private copy (OpenScratch), removed
	// on Close.
	scratch string
}

func newDB(name string, kind dialect, w, r *sql.DB) *DB {
	b := &binder{pg: kind == dialectPostgres}
	d := &DB{name: name, kind: kind, w: w, r: r, b: b, rd: &Reader{db: r, b: b}}
	if kind == dialectSQLite {
		d.stmts = newStmts(w)
	}
	return d
}

// OpenDB opens (creating if needed) the SQLite projections database at
// path.
func OpenDB(path string) (*DB, error) {
	w, err := sqlite.Open(path, true, false)
	if err != nil {
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	r, err := sqlite.Open(path, false, false)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	if err := setup(w); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open projections %s: %w", path, err)
	}
	return newDB(path, dialectSQLite, w, r), nil
}

// Shared reports whether the database is shared by processes on several
// machines (PostgreSQL) rather than kept in one home.
func (d *DB) Shared() bool { return d.kind == dialectPostgres }

// String names the database: its file, or its server's URL without the
// password.
func (d *DB) String() string { return d.name }

// setup makes the tables the runner keeps: checkpoints (with the identity
// of the log each counts positions of; a database from before identities
// gains the column, empty, and adopts the log it next reads), the origins
// of projections kept elsewhere (see Origins) and the quarantine of damaged
// streams.
func setup(w *sql.DB) error {
	if _, err := w.Exec(runnerTables); err != nil {
		return err
	}
	// A column added after the first release (SQLite only: PostgreSQL
	// came later).
	var has int
	if err := w.QueryRow(`SELECT count(*) FROM pragma_table_info('checkpoints') WHERE name = 'log'`).Scan(&has); err != nil {
		return err
	}
	if has == 0 {
		if _, err := w.Exec(`ALTER TABLE checkpoints ADD COLUMN log TEXT NOT NULL DEFAULT ''`); err != nil && !strings.Contains(err.Error(), "duplicate column") {
			return err
		}
	}
	return nil
}

// runnerTables are the runner's tables, in SQLite's dialect (see
// (*Tx).ExecSchema).
const runnerTables = `CREATE TABLE IF NOT EXISTS checkpoints (
		name TEXT PRIMARY KEY, position INTEGER NOT NULL, version INTEGER NOT NULL, log TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
		CREATE TABLE IF NOT EXISTS origins (name TEXT PRIMARY KEY, log TEXT NOT NULL) WITHOUT ROWID;
		CREATE TABLE IF NOT EXISTS quarantine (
		log TEXT NOT NULL, stream TEXT NOT NULL, revision INTEGER NOT NULL, position INTEGER NOT NULL,
		reason TEXT NOT NULL, found_ns INTEGER NOT NULL, PRIMARY KEY (log, stream)) WITHOUT ROWID`

// OpenScratch opens a private copy of the projections database at path in
// a new temporary directory, for a home this process may not write: read
// commands catch the copy up from the log and answer from it; Close
// removes it. A missing or unreadable original gives an empty copy (the
// runner then builds everything from the log).
func OpenScratch(path string) (*DB, error) {
	dir, err := os.MkdirTemp("", "hermes-projections-")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "projections.db")
	if _, err := os.Stat(path); err == nil {
		if src, err := sqlite.OpenReadOnly(path); err == nil {
			_, err = src.Exec(`VACUUM INTO ?`, tmp)
			src.Close()
			if err != nil {
				os.Remove(tmp)
			}
		}
	}
	d, err := OpenDB(tmp)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.scratch = dir
	return d, nil
}

// Reader is the handle read queries use.
func (d *DB) Reader() *Reader { return d.rd }

// Close closes the database.
func (d *DB) Close() error {
	d.stmts.close()
	err := d.w.Close()
	if d.r != d.w {
		err = errors.Join(err, d.r.Close())
	}
	if d.scratch != "" {
		os.RemoveAll(d.scratch)
	}
	return err
}

// Model is a read model kept in tables of the projections database.
type Model interface {
	// Name identifies the model.
	Name() string
	// Version is the shape of its tables; a stored model of another
	// version is dropped and rebuilt.
	Version() int
	// Create makes the model's tables (IF NOT EXISTS).
	Create(tx *Tx) error
	// Drop removes the model's tables.
	Drop(tx *Tx) error
	// Apply applies one event inside the batch's transaction.
	Apply(tx *Tx, ev Event) error
	// Flush writes what Apply gathered in memory, at the end of a batch.
	Flush(tx *Tx) error
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
	ready atomic.Bool
	// mu serializes writes, and with them the model's in-memory caches:
	// a live runner and a catch-up of the same process may write at once.
	mu sync.Mutex
	// mine is the checkpoint this process last wrote; a different stored
	// value means another process applied events, so caches are stale.
	mine uint64
	// writes counts the committed batches: every forgetEvery the model's
	// caches are dropped, so that a process running for months keeps in
	// memory the sessions at work lately, not every session it has seen.
	writes int
}

// forgetEvery is how many committed batches a model's caches live (they
// are read again from the tables as they are needed).
const forgetEvery = 256

// mark is a stored checkpoint: a position in the log identified by log.
type mark struct {
	pos uint64
	log string
}

func (p *tableProjection) Name() string { return p.m.Name() }

// Shared implements Shared: a projection kept in PostgreSQL is one copy
// for every process using the store.
func (p *tableProjection) Shared() bool { return p.db.Shared() }

// prepare creates the tables and rebuilds a model stored at another version.
func (p *tableProjection) prepare(tx *Tx) (mark, error) {
	var m mark
	var version int
	err := tx.QueryRow(`SELECT position, version, log FROM checkpoints WHERE name = ?`, p.m.Name()).Scan(&m.pos, &version, &m.log)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := p.m.Create(tx); err != nil {
			return mark{}, err
		}
		_, err = tx.Exec(`INSERT INTO checkpoints (name, position, version, log) VALUES (?, 0, ?, '')`, p.m.Name(), p.m.Version())
		return mark{}, err
	case err != nil:
		return mark{}, err
	case version != p.m.Version():
		p.m.Forget()
		if err := p.m.Drop(tx); err != nil {
			return mark{}, err
		}
		if err := p.m.Create(tx); err != nil {
			return mark{}, err
		}
		_, err = tx.Exec(`UPDATE checkpoints SET position = 0, version = ?, log = '' WHERE name = ?`, p.m.Version(), p.m.Name())
		return mark{}, err
	}
	return m, nil
}

// write runs fn in a transaction with the stored checkpoint and stores the
// checkpoint fn returns, with the state fn wrote, or neither.
//
// On PostgreSQL other processes may write the projection at the same time
// (a read command catching up beside the live runner): the transaction
// first takes a lock of the projection's name, so that the checkpoint it
// reads stays the stored one until it commits. Without it, two
// transactions could both read checkpoint N and both apply (N, M].
func (p *tableProjection) write(ctx context.Context, fn func(tx *Tx, m mark) (mark, error)) error {
	// The statements the transaction ran unprepared are prepared once it
	// has ended and the projection's lock is let go (deferred first, so
	// run last): preparing needs the writer's one connection, which
	// another projection's transaction may hold.
	var unprepared []string
	defer func() { p.db.stmts.learn(ctx, unprepared) }()
	p.mu.Lock()
	defer p.mu.Unlock()
	sqlTx, err := p.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", p.db.name, err)
	}
	tx := &Tx{tx: sqlTx, ctx: ctx, b: p.db.b, stmts: p.db.stmts}
	defer func() { unprepared = tx.unprepared }()
	if p.db.kind == dialectPostgres {
		_, err = tx.Exec(`SELECT pg_advisory_xact_lock(?, hashtext(?))`, lockSpace, p.m.Name())
	}
	var m mark
	if err == nil {
		m, err = p.prepare(tx)
	}
	if err == nil {
		if m.pos != p.mine {
			p.m.Forget()
		}
		m, err = fn(tx, m)
	}
	if err == nil {
		_, err = tx.Exec(`UPDATE checkpoints SET position = ?, log = ? WHERE name = ?`, m.pos, m.log, p.m.Name())
	}
	if err == nil {
		err = sqlTx.Commit()
	}
	if err != nil {
		sqlTx.Rollback()
		p.m.Forget()
		return err
	}
	p.mine = m.pos
	if p.writes++; p.writes%forgetEvery == 0 {
		p.m.Forget()
	}
	return nil
}

func (p *tableProjection) Checkpoint(ctx context.Context) (uint64, error) {
	if err := p.ensure(ctx); err != nil {
		return 0, err
	}
	var pos uint64
	err := p.db.rd.QueryRowContext(ctx, `SELECT position FROM checkpoints WHERE name = ?`, p.m.Name()).Scan(&pos)
	return pos, err
}

// ensure makes sure, on the first call, that the tables exist at the
// right version.
func (p *tableProjection) ensure(ctx context.Context) error {
	if p.ready.Load() {
		return nil
	}
	if err := p.write(ctx, func(_ *Tx, m mark) (mark, error) { return m, nil }); err != nil {
		return err
	}
	p.ready.Store(true)
	return nil
}

// Origin implements Contiguous.
func (p *tableProjection) Origin(ctx context.Context) (string, error) {
	if err := p.ensure(ctx); err != nil {
		return "", err
	}
	var log string
	err := p.db.rd.QueryRowContext(ctx, `SELECT log FROM checkpoints WHERE name = ?`, p.m.Name()).Scan(&log)
	return log, err
}

func (p *tableProjection) Apply(ctx context.Context, batch []Event) error {
	return p.write(ctx, func(tx *Tx, m mark) (mark, error) {
		return p.applyEvents(tx, m, batch)
	})
}

func (p *tableProjection) applyEvents(tx *Tx, m mark, batch []Event) (mark, error) {
	for _, ev := range batch {
		if ev.Position <= m.pos {
			continue
		}
		if err := p.m.Apply(tx, ev); err != nil {
			return m, fmt.Errorf("event %s@%d (position %d): %w", ev.Stream, ev.Revision, ev.Position, err)
		}
		m.pos = ev.Position
	}
	return m, p.m.Flush(tx)
}

// ApplySpan implements Contiguous: in the transaction that writes the
// state, the span must start at or before the stored checkpoint and come
// from the log the checkpoint counts positions of.
func (p *tableProjection) ApplySpan(ctx context.Context, sp Span) error {
	return p.write(ctx, func(tx *Tx, m mark) (mark, error) {
		if m.log != "" && sp.Log != "" && m.log != sp.Log {
			return m, &GapError{Projection: p.m.Name(), Checkpoint: m.pos, After: sp.After, Log: m.log, SpanLog: sp.Log}
		}
		if m.pos < sp.After {
			return m, &GapError{Projection: p.m.Name(), Checkpoint: m.pos, After: sp.After, Log: m.log, SpanLog: m.log}
		}
		m, err := p.applyEvents(tx, m, sp.Events)
		if err != nil {
			return m, err
		}
		m.pos = max(m.pos, sp.Upto)
		if sp.Log != "" {
			m.log = sp.Log
		}
		return m, nil
	})
}

func (p *tableProjection) Reset(ctx context.Context) error {
	return p.write(ctx, func(tx *Tx, _ mark) (mark, error) {
		p.m.Forget()
		if err := p.m.Drop(tx); err != nil {
			return mark{}, err
		}
		return mark{}, p.m.Create(tx)
	})
}

// Damaged implements Quarantine.
func (d *DB) Damaged(ctx context.Context, log string) ([]Damage, error) {
	rows, err := d.rd.QueryContext(ctx, `SELECT stream, revision, position, reason, found_ns FROM quarantine WHERE log = ? ORDER BY position`, log)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Damage
	for rows.Next() {
		var dm Damage
		var ns int64
		if err := rows.Scan(&dm.Stream, &dm.Revision, &dm.Position, &dm.Reason, &ns); err != nil {
			return nil, err
		}
		dm.Found = time.Unix(0, ns).UTC()
		out = append(out, dm)
	}
	return out, rows.Err()
}

// Quarantine implements Quarantine.
func (d *DB) Quarantine(ctx context.Context, log string, dm Damage) error {
	_, err := d.w.ExecContext(ctx, d.b.bind(`INSERT INTO quarantine (log, stream, revision, position, reason, found_ns) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (log, stream) DO NOTHING`),
		log, dm.Stream, dm.Revision, dm.Position, dm.Reason, dm.Found.UnixNano())
	return err
}

// Release implements Quarantine.
func (d *DB) Release(ctx context.Context) error {
	_, err := d.w.ExecContext(ctx, `DELETE FROM quarantine`)
	return err
}

// ProjectionOrigin implements Origins.
func (d *DB) ProjectionOrigin(ctx context.Context, name string) (string, error) {
	var log string
	err := d.rd.QueryRowContext(ctx, `SELECT log FROM origins WHERE name = ?`, name).Scan(&log)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return log, err
}

// SetProjectionOrigin implements Origins.
func (d *DB) SetProjectionOrigin(ctx context.Context, name, log string) error {
	_, err := d.w.ExecContext(ctx, d.b.bind(Upsert("origins", "name", "name, log")), name, log)
	return err
}

var (
	_ Quarantine = (*DB)(nil)
	_ Origins    = (*DB)(nil)
)
