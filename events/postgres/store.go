// Package postgres is the event store on PostgreSQL, for Hermes processes
// on several machines sharing one log. It keeps the semantics of the
// embedded store exactly: one global log with positions in commit order,
// optimistic concurrency per stream, atomic batches, and erasure of a
// deleted stream behind a tombstone record.
//
// The events live in one table. A unique (stream, revision) constraint is
// the optimistic-concurrency check: two appends that both expected revision
// n race to insert n+1, and the loser's unique violation becomes an
// *events.WrongExpectedVersionError.
//
// Global positions come from a single-row counter (hermes_head) that an
// append updates in its own transaction, just before inserting its rows and
// committing. The row lock it takes is held until commit, so positions are
// handed out in commit order: no transaction can take position n+1 while
// the one holding n has not committed, and the one holding n becomes
// visible before it releases the lock. A subscriber that has read position
// n+1 has therefore seen every position below it. A plain sequence would
// not do: a transaction may take n from it, stall, and commit after
// another has committed n+1, which a subscriber may already have read past.
// The cost is that appends serialise from their counter update to their
// commit (the stream checks before it run concurrently); the benchmarks in
// bench_test.go measure it.
//
// Subscriptions are woken by LISTEN/NOTIFY (a statement-level trigger
// notifies on every insert) and poll as well, so that they keep going while
// their listening connection is re-established; while the server cannot be
// reached at all they retry, from the last event delivered.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/internal/group"
	"github.com/hermes-go/hermes/internal/connstr"
	"github.com/hermes-go/hermes/schema"
)

// schemaVersion is the version of the tables below; a later one migrates
// from it in migrate.
const schemaVersion = 1

// ddl creates the tables idempotently. hermes_events holds the log;
// hermes_head the last position given out (never reused, even when the
// events at the end are erased).
const ddl = `
CREATE TABLE IF NOT EXISTS hermes_events (
	position     bigint  PRIMARY KEY,
	stream       text    NOT NULL,
	revision     bigint  NOT NULL,
	id           text    NOT NULL,
	type         text    NOT NULL,
	version      integer NOT NULL,
	session_id   text    NOT NULL,
	time_ns      bigint  NOT NULL,
	turn_id      text    NOT NULL,
	causation_id text    NOT NULL,
	payload      bytea   NOT NULL,
	CONSTRAINT hermes_events_stream_revision UNIQUE (stream, revision)
);
CREATE TABLE IF NOT EXISTS hermes_head (
	one      boolean PRIMARY KEY DEFAULT true CHECK (one),
	position bigint  NOT NULL
);
INSERT INTO hermes_head (one, position) VALUES (true, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS hermes_schema (
	one     boolean PRIMARY KEY DEFAULT true CHECK (one),
	version integer NOT NULL
);
INSERT INTO hermes_schema (one, version) VALUES (true, 1) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS hermes_log (
	one     boolean PRIMARY KEY DEFAULT true CHECK (one),
	id      text    NOT NULL,
	created timestamptz NOT NULL DEFAULT now()
);
INSERT INTO hermes_log (one, id) VALUES (true, gen_random_uuid()::text) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION hermes_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('hermes_events.' || TG_TABLE_SCHEMA, '');
	RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER hermes_events_notify AFTER INSERT ON hermes_events
	FOR EACH STATEMENT EXECUTE FUNCTION hermes_events_notify();
`

// migrateLock is the advisory lock key that serialises migrations of
// processes opening the same database at once.
const migrateLock = 0x6865726d6573 // "hermes"

const columns = `position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload`

// Store is the PostgreSQL event store. It is safe for concurrent use, and
// any number of processes may share the database.
type Store struct {
	pool    *pgxpool.Pool
	log     zerolog.Logger
	poll    time.Duration
	channel string
	safe    string // the DSN with its password redacted, for messages
	closed  atomic.Bool
	w       *group.Writer[*request]
	closing chan struct{}
	once    sync.Once
	logID   string
	// outage: how long appends and stream reads go on trying while the
	// server cannot be reached (WithOutageWait).
	outage time.Duration

	// Tests only: hold runs inside an append's transaction after its
	// positions are taken; trap takes positions outside the transaction,
	// as a sequence would, to show what the counter prevents.
	hold func(ctx context.Context)
	trap bool
	// Tests only: lostAck, when it says so, makes a group's append fail
	// after its commit, as when the server goes before acknowledging it.
	lostAck func() bool
	// Tests only: tracer sees every statement of every connection the
	// store makes (its pool, its locks, its subscriptions).
	tracer pgx.QueryTracer
}

// Option configures Open.
type Option func(*Store)

// WithLogger sets the logger for diagnostics.
func WithLogger(l zerolog.Logger) Option { return func(s *Store) { s.log = l } }

// WithPollInterval sets how often a live subscription reads the log
// without being notified (a missed notification, a lost connection).
func WithPollInterval(d time.Duration) Option { return func(s *Store) { s.poll = d } }

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value connection string) and creates or migrates the tables.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s := &Store{log: zerolog.Nop(), poll: time.Second, safe: connstr.Redact(dsn),
		closing: make(chan struct{}), outage: DefaultOutageWait}
	for _, o := range opts {
		o(s)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's message may quote the DSN, password and all.
		return nil, fmt.Errorf("open event store %s: the connection string does not parse", s.safe)
	}
	if s.tracer != nil {
		cfg.ConnConfig.Tracer = s.tracer
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// Appends queue on the position counter, not on the pool: let
		// their stream checks run side by side.
		cfg.MaxConns = 16
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open event store %s: %w", s.safe, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open event store %s: %w", s.safe, err)
	}
	s.w = group.Start(maxGroup, s.closing, s.commit, func(r *request) { r.reply <- reply{err: events.ErrClosed} })
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(migrateLock))
	// The DDL runs only where the tables are missing or older: replacing
	// the trigger would wait for every transaction writing the log.
	var current int
	var exists bool
	err = conn.QueryRow(ctx, `SELECT to_regclass('hermes_schema') IS NOT NULL AND to_regclass('hermes_log') IS NOT NULL`).Scan(&exists)
	if err == nil && exists {
		err = conn.QueryRow(ctx, `SELECT version FROM hermes_schema`).Scan(&current)
	}
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current < schemaVersion {
		if _, err := conn.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
	}
	var version int
	var sch string
	if err := conn.QueryRow(ctx, `SELECT s.version, current_schema(), l.id FROM hermes_schema s, hermes_log l`).Scan(&version, &sch, &s.logID); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > schemaVersion {
		return fmt.Errorf("the tables are of version %d, newer than this Hermes knows (%d): upgrade Hermes", version, schemaVersion)
	}
	s.channel = "hermes_events." + sch
	return nil
}

// Close releases the connections.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { close(s.closing) })
	<-s.w.Done()
	s.pool.Close()
	return nil
}

// LogID is the log's identity, made when its tables were created: read
// models built from another log notice they must be rebuilt.
func (s *Store) LogID(context.Context) (string, error) { return s.logID, nil }

// String names the store (password redacted).
func (s *Store) String() string { return s.safe }

// Pool is the store's connection pool, for tools that read the tables
// directly (the copy command's checks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func validate(stream string, evs []schema.Envelope) error {
	if stream == "" {
		return errors.New("append: empty stream name")
	}
	if len(evs) == 0 {
		return fmt.Errorf("append to %s: no events", stream)
	}
	for i, e := range evs {
		if e.ID == "" || e.Type == "" || e.Version < 1 {
			return fmt.Errorf("append to %s: event %d lacks id, type or version", stream, i)
		}
		if !json.Valid(e.Payload) {
			return fmt.Errorf("append to %s: event %d (%s) payload is not valid JSON", stream, i, e.Type)
		}
	}
	return nil
}

// streamState is what the log says of one stream.
type streamState struct {
	last    uint64
	exists  bool
	deleted bool
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func stateOf(ctx context.Context, q querier, stream string) (streamState, error) {
	var st streamState
	var rev int64
	var typ string
	err := q.QueryRow(ctx, `SELECT revision, type FROM hermes_events WHERE stream = $1 ORDER BY revision DESC LIMIT 1`, stream).Scan(&rev, &typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return streamState{last: uint64(rev), exists: true, deleted: typ == events.StreamDeletedType}, nil
}

// statesSQL reads the state of each of the streams $1 (a stream without
// events is absent from its rows: its zero state).
const statesSQL = `SELECT s.name, e.revision, e.type FROM unnest($1::text[]) AS s(name)
	CROSS JOIN LATERAL (SELECT revision, type FROM hermes_events WHERE stream = s.name ORDER BY revision DESC LIMIT 1) AS e`

// scanStates scans the rows of statesSQL.
func scanStates(rows pgx.Rows, n int) (map[string]streamState, error) {
	defer rows.Close()
	out := make(map[string]streamState, n)
	for rows.Next() {
		var name, typ string
		var rev int64
		if err := rows.Scan(&name, &rev, &typ); err != nil {
			return nil, err
		}
		out[name] = streamState{last: uint64(rev), exists: true, deleted: typ == events.StreamDeletedType}
	}
	return out, rows.Err()
}

// isRevisionTaken reports a unique violation on (stream, revision).
func isRevisionTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "hermes_events_stream_revision"
}

// takePositions takes n positions from the counter; the last is returned.
const takePositions = `UPDATE hermes_head SET position = position + $1 RETURNING position`

// errConflict is a unique violation on (stream, revision): another writer
// took the revision between our check and our insert.
var errConflict = errors.New("revision taken")

// Append implements events.Store.
func (s *Store) Append(ctx context.Context, stream string, expected events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	if err := validate(stream, evs); err != nil {
		return events.AppendResult{}, err
	}
	return s.write(ctx, stream, expected, evs)
}

// DeleteStream implements events.Store: it appends the tombstone (at the
// stream's next revision, so above every erased position) and erases the
// stream's events, in one transaction.
func (s *Store) DeleteStream(ctx context.Context, stream string, expected events.Expected) error {
	if stream == "" {
		return errors.New("delete: empty stream name")
	}
	_, err := s.write(ctx, stream, expected, nil)
	return err
}

// write appends evs, or the tombstone when evs is nil, through the
// process's writer (see writer.go).
func (s *Store) write(ctx context.Context, stream string, expected events.Expected, evs []schema.Envelope) (events.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return events.AppendResult{}, err
	}
	if s.closed.Load() {
		return events.AppendResult{}, events.ErrClosed
	}
	if s.trap {
		return s.writeAlone(ctx, stream, expected, evs)
	}
	return s.submit(&request{ctx: ctx, stream: stream, expected: expected, evs: evs, lazy: events.SyncDeferred(ctx)})
}

// writeAlone appends in a transaction of its own, retrying when it lost a
// race that its condition still allows (Any, StreamExists).
func (s *Store) writeAlone(ctx context.Context, stream string, expected events.Expected, evs []schema.Envelope) (events.AppendResult, error) {
	for {
		if err := ctx.Err(); err != nil {
			return events.AppendResult{}, err
		}
		if s.closed.Load() {
			return events.AppendResult{}, events.ErrClosed
		}
		res, err := s.tryWrite(ctx, stream, expected, evs)
		if !errors.Is(err, errConflict) {
			return res, err
		}
		st, err := stateOf(ctx, s.pool, stream)
		if err != nil {
			return events.AppendResult{}, fmt.Errorf("append to %s: %w", stream, err)
		}
		if st.deleted {
			return events.AppendResult{}, fmt.Errorf("append to %s: %w", stream, events.ErrStreamDeleted)
		}
		if !expected.Check(st.last, st.exists) {
			return events.AppendResult{}, &events.WrongExpectedVersionError{Stream: stream, Expected: expected, Actual: st.last, Exists: st.exists}
		}
	}
}

func (s *Store) tryWrite(ctx context.Context, stream string, expected events.Expected, evs []schema.Envelope) (events.AppendResult, error) {
	fail := func(err error) (events.AppendResult, error) {
		if isRevisionTaken(err) {
			return events.AppendResult{}, errConflict
		}
		if ctx.Err() != nil {
			return events.AppendResult{}, ctx.Err()
		}
		return events.AppendResult{}, fmt.Errorf("append to %s in %s: %w", stream, s.safe, err)
	}
	n := int64(max(len(evs), 1))
	var end int64
	if s.trap {
		if err := s.pool.QueryRow(ctx, takePositions, n).Scan(&end); err != nil {
			return fail(err)
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback(context.Background())
	st, err := stateOf(ctx, tx, stream)
	if err != nil {
		return fail(err)
	}
	if st.deleted {
		return events.AppendResult{}, fmt.Errorf("append to %s: %w", stream, events.ErrStreamDeleted)
	}
	if !expected.Check(st.last, st.exists) {
		return events.AppendResult{}, &events.WrongExpectedVersionError{Stream: stream, Expected: expected, Actual: st.last, Exists: st.exists}
	}
	next := uint64(0)
	if st.exists {
		next = st.last + 1
	}
	tombstone := evs == nil
	if tombstone {
		evs = []schema.Envelope{tombstoneOf(stream)}
	}
	// From here to the commit, this transaction holds the counter's row
	// lock: positions are given out in commit order (see the package
	// comment).
	if !s.trap {
		if err := tx.QueryRow(ctx, takePositions, n).Scan(&end); err != nil {
			return fail(err)
		}
	}
	if s.hold != nil {
		s.hold(ctx)
	}
	first := end - n + 1
	pos := make([]int64, n)
	revs := make([]int64, n)
	ids := make([]string, n)
	types := make([]string, n)
	versions := make([]int32, n)
	sids := make([]string, n)
	times := make([]int64, n)
	turns := make([]string, n)
	causes := make([]string, n)
	payloads := make([][]byte, n)
	for i, e := range evs {
		pos[i], revs[i] = first+int64(i), int64(next)+int64(i)
		ids[i], types[i], versions[i], sids[i] = e.ID, e.Type, int32(e.Version), e.SessionID
		times[i], turns[i], causes[i], payloads[i] = e.Time.UnixNano(), e.TurnID, e.CausationID, e.Payload
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hermes_events (`+columns+`)
		SELECT p, $1, r, i, t, v, sid, tn, tu, c, pl
		FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::integer[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::bytea[])
			AS u(p, r, i, t, v, sid, tn, tu, c, pl)`,
		stream, pos, revs, ids, types, versions, sids, times, turns, causes, payloads); err != nil {
		return fail(err)
	}
	if tombstone {
		if _, err := tx.Exec(ctx, `DELETE FROM hermes_events WHERE stream = $1 AND revision < $2`, stream, int64(next)); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(err)
	}
	return events.AppendResult{NextRevision: uint64(revs[n-1]), Position: uint64(end)}, nil
}

func scanRows(rows pgx.Rows, capHint int) ([]events.Recorded, error) {
	defer rows.Close()
	out := make([]events.Recorded, 0, capHint)
	for rows.Next() {
		var r events.Recorded
		var pos, rev, ns int64
		var version int32
		if err := rows.Scan(&pos, &r.Stream, &rev, &r.ID, &r.Type, &version, &r.SessionID, &ns, &r.TurnID, &r.CausationID, &r.Payload); err != nil {
			return out, err
		}
		r.Position, r.Revision, r.Version, r.Time = uint64(pos), uint64(rev), int(version), time.Unix(0, ns).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// ReadStream implements events.Store. While the server cannot be reached
// it goes on trying (see WithOutageWait).
func (s *Store) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	return retryRead(ctx, s, func() ([]events.Recorded, error) { return s.readStream(ctx, stream, dir, from, limit) })
}

func (s *Store) readStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	arg := int64(min(from, 1<<63-1))
	q := `SELECT ` + columns + `, false FROM hermes_events WHERE stream = $1 AND revision >= $2 ORDER BY revision LIMIT $3`
	if dir == events.Backward {
		q = `SELECT ` + columns + `, false FROM hermes_events WHERE stream = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`
	}
	// A deleted stream keeps only its tombstone, and one statement sees
	// the erasure whole: a tombstone among the rows, or none of the rows
	// asked for left, means the stream is deleted. An empty read of the
	// whole stream (forward from its start, backward from its end) would
	// have met the tombstone; a read of part of it also takes the
	// stream's last event (without its payload) in the same statement,
	// which tells, when no row was found, whether that is a tombstone.
	whole := (dir == events.Forward && from == 0) || (dir == events.Backward && arg == 1<<63-1)
	if !whole {
		q = `(` + q + `) UNION ALL (SELECT position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, ''::bytea, true
			FROM hermes_events WHERE stream = $1 ORDER BY revision DESC LIMIT 1)`
	}
	rows, err := s.pool.Query(ctx, q, stream, arg, lim)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.safe, err)
	}
	out, last, err := scanStreamRows(rows, max(limit, 16))
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.safe, err)
	}
	for _, r := range out {
		if r.IsTombstone() {
			return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
		}
	}
	if len(out) == 0 && last != nil && last.IsTombstone() {
		return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
	}
	return out, nil
}

// ReadTurn returns the events of stream recorded for turn, with the
// stream's ContextCompressed events (which name the session the
// conversation went on in), in revision order: what looking a turn up
// needs (see session.LookupTurnIn), read without the rest of a long
// conversation — the server filters, the client gets the turn's rows. A
// deleted stream is events.ErrStreamDeleted; an empty turn reads the
// whole stream. While the server cannot be reached it goes on trying (see
// WithOutageWait).
func (s *Store) ReadTurn(ctx context.Context, stream, turn string) ([]events.Recorded, error) {
	if turn == "" {
		return s.ReadStream(ctx, stream, events.Forward, 0, 0)
	}
	return retryRead(ctx, s, func() ([]events.Recorded, error) {
		rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM hermes_events
			WHERE stream = $1 AND (turn_id = $2 OR type = ANY($3)) ORDER BY revision`,
			stream, turn, []string{schema.TypeContextCompressed, events.StreamDeletedType})
		if err != nil {
			return nil, fmt.Errorf("read turn %s of %s in %s: %w", turn, stream, s.safe, err)
		}
		out, err := scanRows(rows, 16)
		if err != nil {
			return nil, fmt.Errorf("read turn %s of %s in %s: %w", turn, stream, s.safe, err)
		}
		for _, r := range out {
			if r.IsTombstone() {
				return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
			}
		}
		return out, nil
	})
}

// scanStreamRows scans the rows of readStream: the events read, and the
// stream's last event when the statement took it (marked by the last
// column).
func scanStreamRows(rows pgx.Rows, capHint int) (out []events.Recorded, last *events.Recorded, err error) {
	defer rows.Close()
	out = make([]events.Recorded, 0, capHint)
	for rows.Next() {
		var r events.Recorded
		var pos, rev, ns int64
		var version int32
		var tail bool
		if err := rows.Scan(&pos, &r.Stream, &rev, &r.ID, &r.Type, &version, &r.SessionID, &ns, &r.TurnID, &r.CausationID, &r.Payload, &tail); err != nil {
			return out, last, err
		}
		r.Position, r.Revision, r.Version, r.Time = uint64(pos), uint64(rev), int(version), time.Unix(0, ns).UTC()
		if tail {
			last = &r
			continue
		}
		out = append(out, r)
	}
	return out, last, rows.Err()
}

// ReadAll implements events.Store.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Recorded, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM hermes_events WHERE position > $1 ORDER BY position LIMIT $2`, int64(after), int64(limit))
	if err != nil {
		return nil, s.readErr(ctx, after, err)
	}
	out, err := scanRows(rows, limit)
	if err != nil {
		return out, s.readErr(ctx, after, err)
	}
	return out, nil
}

func (s *Store) readErr(ctx context.Context, after uint64, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.closed.Load() {
		return events.ErrClosed
	}
	return fmt.Errorf("read global log in %s after position %d: %w", s.safe, after, err)
}

// Head implements events.Store. While the server cannot be reached it
// goes on trying (see WithOutageWait).
func (s *Store) Head(ctx context.Context) (uint64, error) {
	return retryRead(ctx, s, func() (uint64, error) { return s.head(ctx) })
}

func (s *Store) head(ctx context.Context) (uint64, error) {
	var head int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(position), 0) FROM hermes_events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("read head of %s: %w", s.safe, err)
	}
	return uint64(head), nil
}

// SubscribeAll implements events.Store. A notification wakes it at once
// (after events.WithSettle's wait, when ctx has one); without one it reads
// every poll interval, and when its listening
// connection fails it keeps polling while it reconnects.
func (s *Store) SubscribeAll(ctx context.Context, after uint64, handle func(events.Recorded) error) error {
	const page = 1000
	l := &listener{s: s}
	defer l.close()
	// Listen before the first read, so that nothing committed after that
	// read goes unnoticed.
	l.connect(ctx)
	for {
		batch, err := s.ReadAll(ctx, after, page)
		for _, r := range batch {
			if err := handle(r); err != nil {
				return err
			}
			after = r.Position
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !transient(err) {
				return err
			}
			// The server is out of reach (restarting, failing over):
			// keep trying, from where delivery stopped.
			s.log.Warn().Err(err).Str("store", s.safe).Uint64("after", after).Msg("subscription cannot read the log: retrying")
			l.close()
			if err := l.pause(ctx); err != nil {
				return err
			}
			continue
		}
		if len(batch) == page {
			continue
		}
		notified, err := l.wait(ctx)
		if err != nil {
			return err
		}
		if d := events.SettleOf(ctx); d > 0 && notified {
			// Let a burst of commits land before reading them: one read
			// of the burst, not one per commit (their notifications,
			// queued meanwhile, wake one read more at most).
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

// transient reports a failure to reach the server, as opposed to an error
// the server reported about the query (which retrying would not mend),
// except those it reports when it shuts down or restarts.
func transient(err error) bool {
	var wrong *events.WrongExpectedVersionError
	if errors.Is(err, events.ErrClosed) || errors.Is(err, events.ErrStreamDeleted) || errors.As(err, &wrong) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exceptions; 57P0x: shutdown, crash,
		// cannot connect now.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return true
}

// listener is a subscription's own connection, listening on the store's
// channel.
type listener struct {
	s    *Store
	conn *pgx.Conn
}

func (l *listener) connect(ctx context.Context) bool {
	cfg := l.s.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.s.channel}.Sanitize()); err != nil {
			conn.Close(context.Background())
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			l.s.log.Warn().Err(err).Str("store", l.s.safe).Msg("subscription cannot listen for notifications: polling")
		}
		return false
	}
	l.conn = conn
	return true
}

// wait returns when a notification arrives (notified), the poll interval
// passes, or the listening connection has just been re-established
// (anything committed while it was down is then read).
func (l *listener) wait(ctx context.Context) (notified bool, err error) {
	if l.conn == nil {
		if l.connect(ctx) {
			return false, nil
		}
		return false, l.pause(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, l.s.poll)
	defer cancel()
	_, err = l.conn.WaitForNotification(wctx)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case wctx.Err() != nil:
		return false, nil // the poll interval passed
	}
	l.s.log.Warn().Err(err).Str("store", l.s.safe).Msg("subscription lost its listening connection: polling while it reconnects")
	l.close()
	return false, nil
}

// pause waits one poll interval.
func (l *listener) pause(ctx context.Context) error {
	t := time.NewTimer(l.s.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (l *listener) close() {
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}

var _ events.Store = (*Store)(nil)
