package projections

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/hermes-go/hermes/internal/connstr"
)

// Schema is the PostgreSQL schema that holds the projections' tables,
// beside the event store's in the same database (one Hermes log per
// database: the projections of two logs kept in one database under
// different search paths would share it).
const Schema = "hermes_projections"

// lockSpace is the first key of the advisory locks the projections take
// on PostgreSQL (the second is the hash of a projection's name, or 0 for
// creating the shared tables): "hprj".
const lockSpace = 0x68707266

// PostgresOption configures OpenPostgres.
type PostgresOption func(*pgx.ConnConfig)

// WithQueryTracer reports every statement the projections' connections
// send to t (tracing; tests count statements with it).
func WithQueryTracer(t pgx.QueryTracer) PostgresOption {
	return func(c *pgx.ConnConfig) { c.Tracer = t }
}

// OpenPostgres opens the projections kept in schema hermes_projections of
// the PostgreSQL database at url (a postgres:// URL or key=value string),
// creating the schema and the runner's tables if missing. Every process of
// a cluster opens the same ones: a projection written by one is read by
// all.
func OpenPostgres(ctx context.Context, url string, opts ...PostgresOption) (*DB, error) {
	safe := connstr.Redact(url)
	// pgxpool's parser, as the event store's: it takes (and drops) the
	// pool_* settings a store URL may carry.
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parser's message may quote the URL, password and all.
		return nil, fmt.Errorf("open projections %s: the connection string does not parse", safe)
	}
	cfg := pcfg.ConnConfig
	cfg.RuntimeParams["search_path"] = Schema
	// As on SQLite, commits skip the flush the event store waits for: a
	// crash of the server can lose the last batches, never part of one
	// (a state and its checkpoint commit together), and the runner
	// applies them again from the log.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	for _, o := range opts {
		o(cfg)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	if err := setupPostgres(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open projections %s: %w", safe, err)
	}
	return newDB(safe, dialectPostgres, db, db), nil
}

// setupPostgres makes the schema and the runner's tables (see setup). Two
// processes creating the same table at once may fail in PostgreSQL (a
// unique violation in its catalog), so creation holds a lock.
func setupPostgres(ctx context.Context, db *sql.DB) error {
	// Most opens find everything there: they need neither the lock nor
	// the right to create.
	var ready bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('hermes_projections.checkpoints') IS NOT NULL
		AND to_regclass('hermes_projections.origins') IS NOT NULL AND to_regclass('hermes_projections.quarantine') IS NOT NULL`).Scan(&ready); err != nil {
		return err
	}
	if ready {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, lockSpace); err != nil {
		return fmt.Errorf("lock for creating the tables: %w", err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, Schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA `+pgx.Identifier{Schema}.Sanitize()); err != nil {
			return fmt.Errorf("create schema %s: %w", Schema, err)
		}
	}
	if _, err := tx.ExecContext(ctx, schemaFor(true, runnerTables)); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	return tx.Commit()
}
