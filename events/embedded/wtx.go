package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// txLike is what the writer's code needs of a transaction: a *sql.Tx (a
// file's upgrade at Open) or a wtx (every commit after).
type txLike interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	// Stmt is a statement prepared for the store's writer, usable in this
	// transaction.
	Stmt(*sql.Stmt) *sql.Stmt
}

// wtx is a transaction of the writer: BEGIN IMMEDIATE … COMMIT on the
// writer's one connection, which the store holds from Open to Close, its
// statements prepared on it once.
//
// database/sql's own Tx starts a goroutine per transaction, and another
// per query inside one, that wait to roll back when a context ends; a
// step of the agent commits twice, so that was four goroutines started
// and woken per tool call, each a thread woken on another core. The
// writer's contexts never end (Append waits for its verdict whatever
// happens to its caller's), so a transaction on the held connection with
// the background context needs none of them.
type wtx struct{ c *sql.Conn }

var _ txLike = wtx{}
var _ txLike = (*sql.Tx)(nil)

func (t wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.c.ExecContext(ctx, q, args...)
}

func (t wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.c.QueryContext(ctx, q, args...)
}

func (t wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.c.QueryRowContext(ctx, q, args...)
}

// Stmt returns st itself: the writer's statements are prepared on the
// held connection (see holdWriter).
func (t wtx) Stmt(st *sql.Stmt) *sql.Stmt { return st }

// holdWriter takes the writer's one connection for the store's life and
// prepares the writer's statements on it. After it, nothing else may use
// wdb: it has no other connection to give.
func (s *Store) holdWriter(ctx context.Context) error {
	c, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	s.wconn = c
	return s.prepare()
}

// inTx runs fn in a transaction of the writer's connection and commits
// it; an error of fn, or of the commit, rolls it back.
func (s *Store) inTx(fn func(txLike) error) error {
	if _, err := s.begin.Exec(); err != nil {
		return fmt.Errorf("event store %s: begin: %w", s.path, err)
	}
	if err := fn(wtx{s.wconn}); err != nil {
		if _, rerr := s.rollback.Exec(); rerr != nil {
			return errors.Join(err, fmt.Errorf("event store %s: rollback: %w", s.path, rerr))
		}
		return err
	}
	if _, err := s.commitTx.Exec(); err != nil {
		// A commit that failed (the disk full, the file gone) may leave
		// the transaction open: end it, so the next one can begin.
		s.rollback.Exec()
		return fmt.Errorf("event store %s: commit: %w", s.path, err)
	}
	return nil
}

// releaseWriter closes the writer's statements and gives its connection
// back to wdb, which closes it with its own Close: a connection whose
// statements are still open is not really closed by SQLite, and the last
// connection's close is what checkpoints the write-ahead log into the file
// and removes it.
func (s *Store) releaseWriter() {
	for _, st := range append([]*sql.Stmt{s.insert, s.insertN, s.selStream, s.selHead, s.selVersion,
		s.begin, s.commitTx, s.rollback, s.syncFull, s.syncNormal}, s.upHeads...) {
		if st != nil {
			st.Close()
		}
	}
	if s.wconn != nil {
		s.wconn.Close()
		s.wconn = nil
	}
}
