// Package embedded is the event store Hermes uses when nothing else is
// configured: a SQLite database (pure-Go driver, WAL mode) under
// $HERMES_HOME that several processes can open at once. Appends from one
// process go through a single writer goroutine that commits whatever has
// queued up in one transaction, so concurrent appends share one fsync.
package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

const ddl = `
CREATE TABLE IF NOT EXISTS events (
	position     INTEGER PRIMARY KEY AUTOINCREMENT,
	stream       TEXT    NOT NULL,
	revision     INTEGER NOT NULL,
	id           TEXT    NOT NULL,
	type         TEXT    NOT NULL,
	version      INTEGER NOT NULL,
	session_id   TEXT    NOT NULL,
	time_ns      INTEGER NOT NULL,
	turn_id      TEXT    NOT NULL,
	causation_id TEXT    NOT NULL,
	payload      BLOB    NOT NULL,
	crc          INTEGER NOT NULL,
	UNIQUE (stream, revision)
);
`

// maxBatch bounds how many queued appends one transaction takes.
const maxBatch = 1024

// chunkRows is how many events one multi-row INSERT writes: a batch of
// queued appends costs a few statements instead of one per event.
const chunkRows = 32

// Store is the embedded event store. It is safe for concurrent use, and
// other processes may open the same file at the same time.
type Store struct {
	path string
	log  zerolog.Logger
	poll time.Duration

	rdb *sql.DB // readers
	wdb *sql.DB // the one writing connection of this process

	reqs    chan *request
	closing chan struct{}
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	changed chan struct{} // closed and replaced after every commit

	insert, insertN, selStream *sql.Stmt

	// Owned by the writer goroutine: the last revision of streams this
	// process has seen, valid while no other process has committed.
	cache       map[string]streamState
	dataVersion int64
}

// Option configures Open.
type Option func(*Store)

// WithLogger sets the logger for diagnostics.
func WithLogger(l zerolog.Logger) Option { return func(s *Store) { s.log = l } }

// WithPollInterval sets how often a live subscription looks for events
// appended by other processes (appends of this process wake it at once).
func WithPollInterval(d time.Duration) Option { return func(s *Store) { s.poll = d } }

// OpenSQLite opens a SQLite file the way Hermes uses it everywhere: WAL
// (readers never block the writer, several processes may share the file)
// and a long busy timeout instead of "database is locked". With durable, a
// commit is on disk when it returns (synchronous=FULL); without, it may be
// lost on power failure but never torn (synchronous=NORMAL), which suits
// data that can be rebuilt. A writer handle has one connection whose
// transactions take the write lock at BEGIN.
func OpenSQLite(path string, writer, durable bool) (*sql.DB, error) {
	lock := ""
	if writer {
		lock = "immediate"
	}
	sync := "FULL"
	if !durable {
		sync = "NORMAL"
	}
	db, err := sql.Open("sqlite", dsn(path, lock, sync))
	if err != nil {
		return nil, err
	}
	if writer {
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
	} else {
		db.SetMaxOpenConns(4)
	}
	return db, nil
}

func dsn(path, txlock, sync string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(OFF)")
	q.Add("_pragma", "mmap_size(268435456)")
	q.Add("_pragma", "cache_size(-32768)")
	if txlock != "" {
		q.Add("_txlock", txlock)
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the store in the SQLite file at path.
func Open(path string, opts ...Option) (*Store, error) {
	s := &Store{
		path:    path,
		log:     zerolog.Nop(),
		poll:    100 * time.Millisecond,
		reqs:    make(chan *request, maxBatch),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		cache:   map[string]streamState{},
	}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.wdb, err = OpenSQLite(path, true, true); err != nil {
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	if _, err = s.wdb.Exec(ddl); err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	if err = s.prepare(); err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	if s.rdb, err = OpenSQLite(path, false, true); err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	// A quick read proves the file is a readable database now rather than
	// at the first query.
	var n int64
	if err = s.rdb.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM events ORDER BY position DESC LIMIT 1)`).Scan(&n); err != nil {
		s.rdb.Close()
		s.wdb.Close()
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	go s.writer()
	return s, nil
}

func (s *Store) prepare() (err error) {
	if s.insert, err = s.wdb.Prepare(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc) VALUES `)
	for i := range chunkRows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?,?,?,?,?,?)")
	}
	if s.insertN, err = s.wdb.Prepare(q.String()); err != nil {
		return err
	}
	s.selStream, err = s.wdb.Prepare(lastOfStream)
	return err
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close stops the writer (failing appends still queued) and closes the files.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.closing) })
	<-s.done
	err1 := s.wdb.Close()
	err2 := s.rdb.Close()
	return errors.Join(err1, err2)
}

type request struct {
	ctx      context.Context
	stream   string
	expected events.Expected
	evs      []schema.Envelope
	delete   bool
	reply    chan reply
}

type reply struct {
	res events.AppendResult
	err error
}

// Append implements events.Store. It returns only once the events are on
// disk (fsync) or definitely not written.
func (s *Store) Append(ctx context.Context, stream string, expected events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	if len(evs) == 0 {
		return events.AppendResult{}, fmt.Errorf("append to %s: no events", stream)
	}
	if stream == "" {
		return events.AppendResult{}, errors.New("append: empty stream name")
	}
	for i, e := range evs {
		if e.ID == "" || e.Type == "" || e.Version < 1 {
			return events.AppendResult{}, fmt.Errorf("append to %s: event %d lacks id, type or version", stream, i)
		}
		if !json.Valid(e.Payload) {
			return events.AppendResult{}, fmt.Errorf("append to %s: event %d (%s) payload is not valid JSON", stream, i, e.Type)
		}
	}
	return s.submit(ctx, &request{ctx: ctx, stream: stream, expected: expected, evs: evs})
}

// DeleteStream implements events.Store.
func (s *Store) DeleteStream(ctx context.Context, stream string, expected events.Expected) error {
	_, err := s.submit(ctx, &request{ctx: ctx, stream: stream, expected: expected, delete: true})
	return err
}

func (s *Store) submit(ctx context.Context, r *request) (events.AppendResult, error) {
	r.reply = make(chan reply, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return events.AppendResult{}, ctx.Err()
	case <-s.closing:
		return events.AppendResult{}, events.ErrClosed
	}
	// Once queued, wait for the verdict even if ctx ends: the writer checks
	// ctx before writing, so the answer says exactly whether it was written.
	rep := <-r.reply
	return rep.res, rep.err
}

func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, maxBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			s.commit(batch)
		case <-s.closing:
			for {
				select {
				case r := <-s.reqs:
					r.reply <- reply{err: events.ErrClosed}
				default:
					return
				}
			}
		}
	}
}

// lastOfStream finds a stream's last event through the (stream, revision)
// index: its revision is the stream's, and a tombstone there means deleted.
const lastOfStream = `SELECT revision, type FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1`

func scanState(row *sql.Row) (streamState, error) {
	var st streamState
	var typ string
	err := row.Scan(&st.last, &typ)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.exists, st.deleted = true, typ == events.StreamDeletedType
	return st, nil
}

// streamState is what the writer knows of one stream.
type streamState struct {
	last    uint64
	exists  bool
	deleted bool
}

// commit writes a batch of requests in one transaction. A request whose
// condition fails is answered with its error and writes nothing; the others
// go on. If the transaction fails, every request in it gets that error and
// nothing of the batch is written.
func (s *Store) commit(batch []*request) {
	replies := make([]reply, len(batch))
	wrote := false
	err := s.inTx(func(tx *sql.Tx) error {
		if err := s.validateCache(tx); err != nil {
			return err
		}
		w := &txWriter{s: s, tx: tx, insert: tx.Stmt(s.insert), touched: map[string]streamState{}}
		for i, r := range batch {
			if err := r.ctx.Err(); err != nil {
				replies[i] = reply{err: err}
				continue
			}
			err := w.apply(r, &replies[i].res)
			if err != nil && !isVerdict(err) {
				return err // a storage failure: abandon the whole batch
			}
			replies[i].err = err
			wrote = wrote || err == nil
		}
		return w.flush()
	})
	if err != nil {
		clear(s.cache) // the transaction rolled back: the cache may be ahead
	}
	for i, r := range batch {
		if err != nil {
			replies[i] = reply{err: err}
		}
		r.reply <- replies[i]
	}
	if err == nil && wrote {
		s.mu.Lock()
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
}

// validateCache drops the stream cache when another process has committed
// since our last transaction (PRAGMA data_version changes only for commits
// made through other connections).
func (s *Store) validateCache(tx *sql.Tx) error {
	var v int64
	if err := tx.QueryRow(`PRAGMA data_version`).Scan(&v); err != nil {
		return fmt.Errorf("event store %s: %w", s.path, err)
	}
	if v != s.dataVersion {
		clear(s.cache)
		s.dataVersion = v
	}
	return nil
}

// isVerdict tells a request's own failure (wrong version, deleted stream)
// from a failure of the storage underneath.
func isVerdict(err error) bool {
	var wev *events.WrongExpectedVersionError
	return errors.As(err, &wev) || errors.Is(err, events.ErrStreamDeleted)
}

func (s *Store) inTx(fn func(*sql.Tx) error) error {
	tx, err := s.wdb.Begin()
	if err != nil {
		return fmt.Errorf("event store %s: begin: %w", s.path, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("event store %s: commit: %w", s.path, err)
	}
	return nil
}

// txWriter applies the requests of one transaction.
type txWriter struct {
	s       *Store
	tx      *sql.Tx
	insert  *sql.Stmt
	insertN *sql.Stmt
	rows    []row
	touched map[string]streamState // streams written in this transaction
}

func (w *txWriter) state(stream string) (streamState, error) {
	if st, ok := w.touched[stream]; ok {
		return st, nil
	}
	if st, ok := w.s.cache[stream]; ok {
		return st, nil
	}
	st, err := scanState(w.tx.Stmt(w.s.selStream).QueryRow(stream))
	if err != nil {
		return st, fmt.Errorf("append to %s: %w", stream, err)
	}
	return st, nil
}

// row is one event waiting for its INSERT; res, on the last event of a
// request, receives the position it lands at.
type row struct {
	args [11]any
	res  *events.AppendResult
}

func (w *txWriter) apply(r *request, res *events.AppendResult) error {
	st, err := w.state(r.stream)
	if err != nil {
		return err
	}
	if st.deleted {
		return fmt.Errorf("append to %s: %w", r.stream, events.ErrStreamDeleted)
	}
	if !r.expected.Check(st.last, st.exists) {
		return &events.WrongExpectedVersionError{Stream: r.stream, Expected: r.expected, Actual: st.last, Exists: st.exists}
	}
	next := uint64(0)
	if st.exists {
		next = st.last + 1
	}
	if r.delete {
		// The tombstone must land after every row queued before it.
		if err := w.insertRows(); err != nil {
			return err
		}
		out, err := w.s.tombstone(w.tx, r.stream, next)
		if err == nil {
			*res = out
			delete(w.touched, r.stream) // written already
			w.s.cache[r.stream] = streamState{last: next, exists: true, deleted: true}
		}
		return err
	}
	for i, e := range r.evs {
		rev := next + uint64(i)
		rw := row{args: [11]any{r.stream, rev, e.ID, e.Type, e.Version, e.SessionID, e.Time.UnixNano(), e.TurnID, e.CausationID, []byte(e.Payload), checksum(e.Payload)}}
		if i == len(r.evs)-1 {
			res.NextRevision = rev
			rw.res = res
		}
		w.rows = append(w.rows, rw)
	}
	w.touched[r.stream] = streamState{last: res.NextRevision, exists: true}
	return nil
}

// insertRows writes the queued rows: full chunks with the multi-row
// statement, the rest one by one. Positions are consecutive within one
// statement (AUTOINCREMENT under the write lock), so each row's position
// follows from the statement's last insert id.
func (w *txWriter) insertRows() error {
	rows := w.rows
	w.rows = w.rows[:0]
	for len(rows) > 0 {
		n := 1
		stmt := w.insert
		if len(rows) >= chunkRows {
			n = chunkRows
			if w.insertN == nil {
				w.insertN = w.tx.Stmt(w.s.insertN)
			}
			stmt = w.insertN
		}
		args := make([]any, 0, 11*n)
		for _, rw := range rows[:n] {
			args = append(args, rw.args[:]...)
		}
		out, err := stmt.Exec(args...)
		if err != nil {
			return fmt.Errorf("append to %s: %w", rows[0].args[0], err)
		}
		last, err := out.LastInsertId()
		if err != nil {
			return err
		}
		for k, rw := range rows[:n] {
			if rw.res != nil {
				rw.res.Position = uint64(last) - uint64(n-1-k)
			}
		}
		rows = rows[n:]
	}
	return nil
}

// flush writes the queued rows and remembers the new last revision of
// every stream the transaction wrote; it runs just before the commit.
func (w *txWriter) flush() error {
	if err := w.insertRows(); err != nil {
		return err
	}
	for name, st := range w.touched {
		w.s.cache[name] = st
	}
	return nil
}

// tombstone appends the deletion record first (so its position is above
// every erased one) and then erases the stream's events.
func (s *Store) tombstone(tx *sql.Tx, stream string, rev uint64) (events.AppendResult, error) {
	out, err := tx.Exec(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc)
		VALUES (?, ?, ?, ?, 1, ?, ?, '', '', '{}', ?)`,
		stream, rev, uuid.NewString(), events.StreamDeletedType, events.SessionOf(stream), time.Now().UnixNano(), checksum([]byte("{}")))
	if err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	pos, _ := out.LastInsertId()
	if _, err := tx.Exec(`DELETE FROM events WHERE stream = ? AND revision < ?`, stream, rev); err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	return events.AppendResult{NextRevision: rev, Position: uint64(pos)}, nil
}

const columns = `position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc`

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum guards each payload against damage SQLite itself would not see
// (it has no page checksums): a flipped byte is reported, not replayed.
func checksum(b []byte) int64 { return int64(crc32.Checksum(b, castagnoli)) }

func scanRows(rows *sql.Rows, capHint int) ([]events.Recorded, error) {
	defer rows.Close()
	out := make([]events.Recorded, 0, capHint)
	for rows.Next() {
		var r events.Recorded
		var ns int64
		var payload []byte
		var crc int64
		if err := rows.Scan(&r.Position, &r.Stream, &r.Revision, &r.ID, &r.Type, &r.Version, &r.SessionID, &ns,
			&r.TurnID, &r.CausationID, &payload, &crc); err != nil {
			return out, fmt.Errorf("scan event after position %d: %w", lastPos(out), err)
		}
		if checksum(payload) != crc {
			return out, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position,
				Err: errors.New("payload checksum mismatch")}
		}
		r.Time = time.Unix(0, ns).UTC()
		r.Payload = payload
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read events after position %d: %w", lastPos(out), err)
	}
	return out, nil
}

func lastPos(rs []events.Recorded) uint64 {
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Position
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	if limit <= 0 {
		limit = -1
	}
	st, err := scanState(s.rdb.QueryRowContext(ctx, lastOfStream, stream))
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.path, err)
	}
	if !st.exists {
		return nil, nil
	}
	if st.deleted {
		return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
	}
	q := `SELECT ` + columns + ` FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`
	arg := int64(from)
	if dir == events.Backward {
		q = `SELECT ` + columns + ` FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`
		if from == events.End {
			arg = 1<<63 - 1
		}
	}
	rows, err := s.rdb.QueryContext(ctx, q, stream, arg, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.path, err)
	}
	out, err := scanRows(rows, max(limit, 16))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stream, err)
	}
	return out, nil
}

// ReadAll implements events.Store.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Recorded, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+columns+` FROM events WHERE position > ? ORDER BY position LIMIT ?`, int64(after), limit)
	if err != nil {
		if errors.Is(err, sql.ErrConnDone) || s.isClosed() {
			return nil, events.ErrClosed
		}
		return nil, fmt.Errorf("read global log after %d in %s: %w", after, s.path, err)
	}
	out, err := scanRows(rows, limit)
	if err != nil {
		return nil, fmt.Errorf("read global log in %s: %w", s.path, err)
	}
	return out, nil
}

// Head implements events.Store.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	var head sql.NullInt64
	if err := s.rdb.QueryRowContext(ctx, `SELECT max(position) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("read head of %s: %w", s.path, err)
	}
	return uint64(head.Int64), nil
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

func (s *Store) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// SubscribeAll implements events.Store. Appends from this process wake the
// subscription at once; those of other processes are found by polling.
func (s *Store) SubscribeAll(ctx context.Context, after uint64, handle func(events.Recorded) error) error {
	const page = 1000
	timer := time.NewTimer(s.poll)
	defer timer.Stop()
	for {
		wake := s.changes() // taken before reading, so no commit is missed
		batch, err := s.ReadAll(ctx, after, page)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, r := range batch {
			if err := handle(r); err != nil {
				return err
			}
			after = r.Position
		}
		if len(batch) == page {
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(s.poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return events.ErrClosed
		case <-wake:
		case <-timer.C:
		}
	}
}

var _ events.Store = (*Store)(nil)
