// Package embedded is the event store Hermes uses when nothing else is
// configured: a SQLite database (pure-Go driver, WAL mode) under
// $HERMES_HOME that several processes can open at once. Appends from one
// process go through a single writer goroutine that commits whatever has
// queued up in one transaction, so concurrent appends share one fsync.
//
// Nothing read back is trusted blindly: every row carries a checksum of the
// whole record (record.go); every position the log has given out is either
// a row or recorded as erased, and every stream's end is kept apart from
// its rows and their index, so a lost row or a damaged index is reported
// rather than read as a shorter log. The file carries an identity
// (meta.go), so that read models notice when it is replaced. Verify and
// Quarantine (check.go) find damage and move it aside.
package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/internal/group"
	"github.com/hermes-go/hermes/internal/sqlite"
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
	record_crc   INTEGER NOT NULL,
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
	wdb *sql.DB // the one writing connection of this process; nil when read-only
	// wconn is wdb's connection, held by the writer from Open to Close
	// (see wtx.go).
	wconn *sql.Conn

	// Read from the meta table at open (see meta.go).
	ident      Identity
	format2    bool  // holes must be recorded in erased; checked on reads
	legacyHead int64 // rows up to here may carry a payload-only checksum
	upgradedTo int64 // the one-time checksum upgrade got this far
	// noLog: a read-only open of a file that has no events table (an
	// empty file): it reads as an empty log.
	noLog bool
	// cols are the columns reads select: those of format 1 in a file a
	// read-only open did not upgrade.
	cols string

	// w is the writer of a writable store (nil: read-only).
	w       *group.Writer[*request]
	closing chan struct{}
	once    sync.Once

	mu      sync.Mutex
	changed chan struct{} // closed and replaced after every commit

	insert, insertN, selStream, selHead, upHead, selVersion *sql.Stmt
	// The writer's transaction and sync statements, prepared once on its
	// held connection (each was parsed again on every commit: ~0.1 ms a
	// tool call).
	begin, commitTx, rollback, syncFull, syncNormal *sql.Stmt
	upHeads                                         []*sql.Stmt // one per headChunks

	// Owned by the writer goroutine: the last revision of streams this
	// process has seen, and the next position to give out (0: unknown),
	// valid while no other process has committed.
	cache       map[string]streamState
	nextPos     int64
	dataVersion int64
	sums        summer

	// The guard (guard.go): what the home remembers of the log, the files
	// an open store watches, and the loss once it is found.
	witnessPath  string
	remembered   func(context.Context) ([]Remembered, error)
	accept       bool
	witness      *witness
	others       []Remembered
	guardEvery   time.Duration
	witnessEvery time.Duration
	witnessPos   uint64
	witnessAt    time.Time
	pin          *sql.Conn // kept open: it still reads the files Open found
	gmu          sync.Mutex
	guarded      []guarded     // guarded by gmu
	acked        atomic.Uint64 // the highest position committed or seen
	// durable is the highest position known to be on disk (what the
	// witness may remember): acked, less lazily committed events not yet
	// synced (events.DeferSync).
	durable atomic.Uint64
	// Owned by the writer goroutine: whether the connection's synchronous
	// pragma is known and FULL, and whether a lazy commit awaits a sync.
	modeSet, modeFull bool
	unsynced          bool
	flushArmed        atomic.Bool
	lost              atomic.Pointer[events.LogLostError]
	watchDone         chan struct{}
}

// Option configures Open.
type Option func(*Store)

// WithLogger sets the logger for diagnostics.
func WithLogger(l zerolog.Logger) Option { return func(s *Store) { s.log = l } }

// WithPollInterval sets how often a live subscription looks for events
// appended by other processes (appends of this process wake it at once).
func WithPollInterval(d time.Duration) Option { return func(s *Store) { s.poll = d } }

// openExisting opens the store's file, which must already exist (see
// sqlite.OpenExisting); a reader handle has one connection more, for the
// guard (see startGuard).
func openExisting(path string, writer bool) (*sql.DB, error) {
	db, err := sqlite.OpenExisting(path, writer)
	if err == nil && !writer {
		db.SetMaxOpenConns(5) // one is the guard's (see startGuard)
	}
	return db, err
}

func newStore(path string, opts []Option) *Store {
	s := &Store{
		path:    path,
		log:     zerolog.Nop(),
		poll:    100 * time.Millisecond,
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		cache:   map[string]streamState{},
		cols:    columns,

		guardEvery:   2 * time.Second,
		witnessEvery: 10 * time.Second,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Open opens (creating if needed) the store in the SQLite file at path.
// The first writer to open a file made by an older Hermes gives it an
// identity and upgrades its checksums (see meta.go). With WithWitness or
// WithRemembered, a log the home remembers that is missing, another or
// shorter fails the open with an *events.LogLostError (see guard.go).
func Open(path string, opts ...Option) (*Store, error) {
	s := newStore(path, opts)
	fail := func(err error) (*Store, error) {
		if s.pin != nil {
			s.pin.Close()
		}
		if s.rdb != nil {
			s.rdb.Close()
		}
		s.releaseWriter()
		if s.wdb != nil {
			s.wdb.Close()
		}
		if errors.Is(err, events.ErrLogLost) {
			return nil, err // it names the file
		}
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	ctx := context.Background()
	if err := s.precheck(ctx); err != nil {
		return fail(err)
	}
	// The file is created here, once: the connections open it only if it
	// exists (see openExisting).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	f.Close()
	if s.wdb, err = openExisting(path, true); err != nil {
		return fail(err)
	}
	if err = s.judgeOpen(ctx, s.wdb); err != nil {
		return fail(err)
	}
	if _, err = s.wdb.Exec(ddl); err != nil {
		return fail(err)
	}
	if err = s.initMeta(ctx); err != nil {
		return fail(err)
	}
	if s.rdb, err = openExisting(path, false); err != nil {
		return fail(err)
	}
	if err = s.loadMeta(ctx); err != nil {
		return fail(err)
	}
	if err = s.upgradeChecksums(ctx); err != nil {
		return fail(fmt.Errorf("upgrade checksums: %w", err))
	}
	// A quick read proves the file is a readable database now rather than
	// at the first query.
	var n int64
	if err = s.rdb.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM events ORDER BY position DESC LIMIT 1)`).Scan(&n); err != nil {
		return fail(err)
	}
	if err = s.startGuard(ctx); err != nil {
		return fail(err)
	}
	if err = s.holdWriter(ctx); err != nil {
		return fail(err)
	}
	s.w = group.Start(maxBatch, s.closing, s.commit, func(r *request) { r.reply <- reply{err: events.ErrClosed} })
	return s, nil
}

// OpenReadOnly opens the store at path for reading: it writes nothing, not
// even the identity an older file lacks, and works where the file or its
// directory cannot be written. Appends fail. A missing file is an error;
// an empty one reads as an empty log.
func OpenReadOnly(path string, opts ...Option) (*Store, error) {
	s := newStore(path, opts)
	if err := s.precheck(context.Background()); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	var err error
	if s.rdb, err = sqlite.OpenReadOnly(path); err != nil {
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	var n int64
	err = s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(&n)
	if err == nil && n == 0 {
		s.noLog = true
	}
	if err == nil {
		if err = s.judgeOpen(context.Background(), s.rdb); errors.Is(err, events.ErrLogLost) {
			s.rdb.Close()
			return nil, err
		}
	}
	if err == nil && !s.noLog {
		err = s.loadMeta(context.Background())
	}
	if err == nil && !s.noLog {
		var v2 bool
		if v2, err = hasColumn(context.Background(), s.rdb, "record_crc"); !v2 {
			s.cols = columnsV1
		}
	}
	if err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("open event store %s: %w", path, err)
	}
	return s, nil
}

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.wdb == nil }

func (s *Store) prepare() (err error) {
	if s.insert, err = s.wconn.PrepareContext(context.Background(), `INSERT INTO events (`+insertColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO events (` + insertColumns + `) VALUES `)
	for i := range chunkRows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?,?,?,?,?,?)")
	}
	if s.insertN, err = s.wconn.PrepareContext(context.Background(), q.String()); err != nil {
		return err
	}
	if s.selStream, err = s.wconn.PrepareContext(context.Background(), lastOfStream); err != nil {
		return err
	}
	if s.selHead, err = s.wconn.PrepareContext(context.Background(), streamHead); err != nil {
		return err
	}
	if s.selVersion, err = s.wconn.PrepareContext(context.Background(), `PRAGMA data_version`); err != nil {
		return err
	}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{{&s.begin, "BEGIN IMMEDIATE"}, {&s.commitTx, "COMMIT"}, {&s.rollback, "ROLLBACK"},
		{&s.syncFull, "PRAGMA synchronous=FULL"}, {&s.syncNormal, "PRAGMA synchronous=NORMAL"}} {
		if *p.st, err = s.wconn.PrepareContext(context.Background(), p.q); err != nil {
			return err
		}
	}
	for _, n := range headChunks {
		var q strings.Builder
		q.WriteString(`INSERT INTO streams (stream, last, deleted) VALUES (?, ?, ?)`)
		for range n - 1 {
			q.WriteString(`, (?, ?, ?)`)
		}
		q.WriteString(` ON CONFLICT (stream) DO UPDATE SET last = excluded.last, deleted = excluded.deleted`)
		st, err := s.wconn.PrepareContext(context.Background(), q.String())
		if err != nil {
			return err
		}
		s.upHeads = append(s.upHeads, st)
		if n == 1 {
			s.upHead = st
		}
	}
	return nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close stops the writer (failing appends still queued) and closes the
// files. It looks at them a last time first: a log lost since the last
// look is reported (and what this process still holds of it saved), and
// one that is not has its witness brought up to date.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.closing) })
	if s.w != nil {
		<-s.w.Done()
	}
	var lost, werr error
	if s.unsynced {
		// Lazy commits are made durable before the files are closed.
		werr = s.syncWAL()
	}
	if s.watchDone != nil {
		<-s.watchDone
		if lost = s.checkFiles(); lost == nil && werr == nil {
			werr = s.recordWitness(true)
		}
		s.pin.Close()
	}
	var err1 error
	s.releaseWriter()
	if s.wdb != nil {
		err1 = s.wdb.Close()
	}
	err2 := s.rdb.Close()
	return errors.Join(lost, werr, err1, err2)
}

type request struct {
	ctx      context.Context
	stream   string
	expected events.Expected
	evs      []schema.Envelope
	delete   bool
	// fn, when set, is run alone in the writer's transaction (repairs).
	fn func(txLike) error
	// lazy: the append may be committed without an fsync (events.DeferSync).
	lazy bool
	// flush: no write, only make lazily committed events durable.
	flush bool
	reply chan reply
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
	return s.submit(ctx, &request{ctx: ctx, stream: stream, expected: expected, evs: evs, lazy: events.SyncDeferred(ctx)})
}

// DeleteStream implements events.Store.
func (s *Store) DeleteStream(ctx context.Context, stream string, expected events.Expected) error {
	_, err := s.submit(ctx, &request{ctx: ctx, stream: stream, expected: expected, delete: true})
	return err
}

// ErrReadOnly is returned by appends to a store opened with OpenReadOnly.
var ErrReadOnly = errors.New("the event store is open read-only")

func (s *Store) submit(ctx context.Context, r *request) (events.AppendResult, error) {
	if s.wdb == nil {
		return events.AppendResult{}, fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	if e := s.lost.Load(); e != nil {
		return events.AppendResult{}, e
	}
	r.reply = make(chan reply, 1)
	if err := s.w.Queue(ctx, r); err != nil {
		return events.AppendResult{}, err
	}
	// Once queued, wait for the verdict even if ctx ends: the writer checks
	// ctx before writing, so the answer says exactly whether it was written.
	rep := <-r.reply
	return rep.res, rep.err
}

// lastOfStream finds a stream's last event through the (stream, revision)
// index: its revision is the stream's, and a tombstone there means deleted.
const lastOfStream = `SELECT revision, type FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1`

// streamHead reads a stream's last revision from the streams table, which
// every append keeps apart from the rows and their index: the two are
// compared, so that damage to either cannot cut a stream short unnoticed.
const streamHead = `SELECT last, deleted FROM streams WHERE stream = ?`

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

func scanHead(row *sql.Row) (streamState, error) {
	var st streamState
	err := row.Scan(&st.last, &st.deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	st.exists = err == nil
	return st, err
}

// headOf returns what the streams table says of stream. The index is
// asked too when full is set or the table knows no such stream (a lost
// row of the table must not make a stream look new); a disagreement is
// reported as damage.
func headOf(ctx context.Context, head, last *sql.Stmt, stream string, full bool) (streamState, error) {
	st, err := scanHead(head.QueryRowContext(ctx, stream))
	if err != nil || (st.exists && !full) {
		return st, err
	}
	ix, err := scanState(last.QueryRowContext(ctx, stream))
	if err != nil {
		return st, err
	}
	if ix != st {
		return st, &events.CorruptEventError{Stream: stream, Revision: max(st.last, ix.last),
			Err: fmt.Errorf("the stream's recorded end (%s) and its index (%s) disagree", st, ix)}
	}
	return st, nil
}

// streamState is what the writer knows of one stream.
type streamState struct {
	last    uint64
	exists  bool
	deleted bool
}

func (st streamState) String() string {
	switch {
	case !st.exists:
		return "no stream"
	case st.deleted:
		return fmt.Sprintf("deleted at revision %d", st.last)
	}
	return fmt.Sprintf("revision %d", st.last)
}

// commit writes a batch of requests in one transaction. A request whose
// condition fails is answered with its error and writes nothing; the others
// go on. If the transaction fails, every request in it gets that error and
// nothing of the batch is written.
func (s *Store) commit(batch []*request) {
	replies := make([]reply, len(batch))
	wrote := false
	// A transaction syncs unless every request in it deferred its sync; a
	// batch of flushes alone writes nothing and only syncs the WAL.
	lazy, work := true, false
	for _, r := range batch {
		lazy = lazy && r.lazy
		work = work || !r.flush
	}
	// The files are looked at before the transaction, so that nothing is
	// written to a lost log, and after it, so that nothing written to a
	// file that went meanwhile is acknowledged as safe.
	err := s.checkFiles()
	if err == nil && work {
		err = s.syncMode(!lazy)
		if err == nil {
			err = s.inTx(func(tx txLike) (err error) {
				wrote, err = s.write(tx, batch, replies)
				return err
			})
		}
	} else if err == nil && s.unsynced {
		err = s.syncWAL()
	}
	if err != nil {
		clear(s.cache) // the transaction rolled back: the cache may be ahead
		s.nextPos = 0
	} else {
		if s.nextPos > 0 {
			s.raiseAcked(uint64(s.nextPos - 1))
		}
		s.settle(lazy && work)
		err = s.checkFiles()
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

// write applies the batch in tx, answering each request in replies; it
// reports whether anything was written. An error abandons the whole batch.
func (s *Store) write(tx txLike, batch []*request, replies []reply) (bool, error) {
	if err := s.validateCache(tx); err != nil {
		return false, err
	}
	wrote := false
	w := &txWriter{s: s, tx: tx, insert: tx.Stmt(s.insert), touched: map[string]streamState{}}
	for i, r := range batch {
		if r.flush {
			continue // the commit syncs: nothing to write
		}
		if err := r.ctx.Err(); err != nil {
			replies[i] = reply{err: err}
			continue
		}
		if r.fn != nil {
			// What was queued before lands first; what fn changes
			// is read back by the requests after it.
			if err := w.flush(); err != nil {
				return false, err
			}
			clear(w.touched)
			if err := r.fn(tx); err != nil {
				return false, err
			}
			clear(s.cache)
			wrote = true
			continue
		}
		err := w.apply(r, &replies[i].res)
		if err != nil && !isVerdict(err) {
			return false, err // a storage failure: abandon the whole batch
		}
		replies[i].err = err
		wrote = wrote || err == nil
	}
	return wrote, w.flush()
}

// validateCache drops the stream cache when another process has committed
// since our last transaction (PRAGMA data_version changes only for commits
// made through other connections). Whenever it reads the head again it
// checks, in the same read, that the file still holds the log this store
// opened, no shorter than the highest position it saw (see guard.go): a
// change by anyone else, through SQLite, moves data_version.
func (s *Store) validateCache(tx txLike) error {
	var v int64
	if err := tx.Stmt(s.selVersion).QueryRow().Scan(&v); err != nil {
		return fmt.Errorf("event store %s: %w", s.path, err)
	}
	if v != s.dataVersion {
		clear(s.cache)
		s.nextPos = 0
		s.dataVersion = v
	}
	if s.nextPos == 0 {
		acked := s.acked.Load()
		var id sql.NullString
		var head int64
		if err := tx.QueryRowContext(context.Background(), `SELECT (SELECT value FROM meta WHERE key = 'log_id'), `+allocatedExpr).Scan(&id, &head); err != nil {
			return fmt.Errorf("event store %s: %w", s.path, err)
		}
		if err := s.judgeContent(id.String, head, acked); err != nil {
			return err
		}
		s.nextPos = head + 1
	}
	return nil
}

// isVerdict tells a request's own failure (wrong version, deleted stream)
// from a failure of the storage underneath.
func isVerdict(err error) bool {
	var wev *events.WrongExpectedVersionError
	var ce *events.CorruptEventError
	return errors.As(err, &wev) || errors.Is(err, events.ErrStreamDeleted) || errors.As(err, &ce)
}

// lazyDelay bounds how long a commit whose sync was deferred waits for a
// durable commit to carry it to disk before the writer syncs the WAL on
// its own.
const lazyDelay = 500 * time.Millisecond

// syncMode sets the writing connection's synchronous pragma for the next
// transaction: FULL syncs the WAL at commit, NORMAL leaves it to the next
// FULL commit or checkpoint. An fsync of the WAL covers every frame before
// it, so one durable commit makes the lazy ones before it durable too.
func (s *Store) syncMode(full bool) error {
	if s.modeSet && s.modeFull == full {
		return nil
	}
	mode := "NORMAL"
	if full {
		mode = "FULL"
	}
	st := s.syncNormal
	if full {
		st = s.syncFull
	}
	if _, err := st.Exec(); err != nil {
		return fmt.Errorf("event store %s: synchronous=%s: %w", s.path, mode, err)
	}
	s.modeSet, s.modeFull = true, full
	return nil
}

// syncWAL makes lazily committed events durable without writing anything:
// an fsync of the write-ahead log file. (Frames a checkpoint has moved
// into the main file were synced before it moved them.)
func (s *Store) syncWAL() error {
	f, err := os.Open(s.path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing unsynced can be in a WAL that is not there
	}
	if err != nil {
		return fmt.Errorf("event store %s: sync: %w", s.path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("event store %s: sync: %w", s.path, err)
	}
	s.unsynced = false
	s.raiseDurable(s.acked.Load())
	return nil
}

// settle records after a successful commit whether the log is on disk up
// to what was acknowledged; a lazy commit arms the delayed flush.
func (s *Store) settle(lazy bool) {
	if !lazy {
		s.unsynced = false
		s.raiseDurable(s.acked.Load())
		return
	}
	s.unsynced = true
	if s.flushArmed.CompareAndSwap(false, true) {
		time.AfterFunc(lazyDelay, func() {
			s.flushArmed.Store(false)
			r := &request{ctx: context.Background(), flush: true, lazy: false, reply: make(chan reply, 1)}
			if s.w.Queue(context.Background(), r) == nil {
				<-r.reply
			}
		})
	}
}

// raiseDurable records that the log is on disk up to position p.
func (s *Store) raiseDurable(p uint64) {
	for {
		old := s.durable.Load()
		if p <= old || s.durable.CompareAndSwap(old, p) {
			return
		}
	}
}

// txWriter applies the requests of one transaction.
type txWriter struct {
	s       *Store
	tx      txLike
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
	st, err := headOf(context.Background(), w.tx.Stmt(w.s.selHead), w.tx.Stmt(w.s.selStream), stream, true)
	if err != nil {
		return st, fmt.Errorf("append to %s: %w", stream, err)
	}
	return st, nil
}

// row is one event waiting for its INSERT; res, on the last event of a
// request, receives the position it lands at.
type row struct {
	args [12]any
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
		// Positions are worked out here, in the order the rows are
		// inserted, so that each row's checksum can cover its position.
		// AUTOINCREMENT gives the same ones (the writer holds the write
		// lock, and knows the highest position given out): the INSERT
		// leaves them to it, which keeps SQLite's fast path for appending
		// to the end of the table, and insertRows checks they agree.
		rc := rec{pos: w.s.nextPos, stream: r.stream, rev: int64(next) + int64(i), id: e.ID, typ: e.Type, version: int64(e.Version),
			sid: e.SessionID, ns: e.Time.UnixNano(), turn: e.TurnID, cause: e.CausationID, payload: e.Payload}
		w.s.nextPos++
		rw := row{args: [12]any{rc.pos, rc.stream, rc.rev, rc.id, rc.typ, rc.version, rc.sid, rc.ns, rc.turn, rc.cause, []byte(rc.payload), w.s.sums.sum(&rc)}}
		if i == len(r.evs)-1 {
			res.NextRevision = uint64(rc.rev)
			res.Position = uint64(rc.pos)
			rw.res = res
		}
		w.rows = append(w.rows, rw)
	}
	w.touched[r.stream] = streamState{last: res.NextRevision, exists: true}
	return nil
}

// insertRows writes the queued rows: full chunks with the multi-row
// statement, the rest one by one. AUTOINCREMENT gives each row the next
// position, consecutive within a statement; the last one must be the one
// its checksum was computed with.
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
			args = append(args, rw.args[1:]...)
		}
		out, err := stmt.Exec(args...)
		if err != nil {
			return fmt.Errorf("append to %s: %w", rows[0].args[1], err)
		}
		last, err := out.LastInsertId()
		if err != nil {
			return fmt.Errorf("append to %s: %w", rows[0].args[1], err)
		}
		if want := rows[n-1].args[0].(int64); last != want {
			// Never expected: the checksums would not match the rows.
			return fmt.Errorf("append to %s: the rows landed at position %d, not %d as their checksums say", rows[0].args[1], last, want)
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
	if err := w.recordEnds(); err != nil {
		return err
	}
	for name, st := range w.touched {
		w.s.cache[name] = st
	}
	return nil
}

// recordEnds writes the new end of every stream the transaction wrote into
// the streams table, several streams per statement.
func (w *txWriter) recordEnds() error {
	if len(w.touched) == 0 {
		return nil
	}
	args := make([]any, 0, 3*len(w.touched))
	for name, st := range w.touched {
		args = append(args, name, st.last, st.deleted)
	}
	for i, n := range headChunks {
		for len(args) >= 3*n {
			if _, err := w.tx.Stmt(w.s.upHeads[i]).Exec(args[:3*n]...); err != nil {
				return fmt.Errorf("record stream ends: %w", err)
			}
			args = args[3*n:]
		}
	}
	return nil
}

// headChunks are the numbers of stream ends one statement records: a
// transaction's are written in as few statements as these allow, each
// prepared once at Open (a statement cannot be prepared on the writer's
// one connection while a transaction holds it).
var headChunks = []int{16, 4, 1}

// tombstone appends the deletion record first (so its position is above
// every erased one), records the positions it erases, and erases the
// stream's events.
func (s *Store) tombstone(tx txLike, stream string, rev uint64) (events.AppendResult, error) {
	rc := rec{pos: s.nextPos, stream: stream, rev: int64(rev), id: uuid.NewString(), typ: events.StreamDeletedType, version: 1,
		sid: events.SessionOf(stream), ns: time.Now().UnixNano(), payload: []byte("{}")}
	if _, err := tx.ExecContext(context.Background(), `INSERT INTO events (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rc.pos, rc.stream, rc.rev, rc.id, rc.typ, rc.version, rc.sid, rc.ns, rc.turn, rc.cause, rc.payload, s.sums.sum(&rc)); err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	s.nextPos++
	if _, err := tx.ExecContext(context.Background(), `INSERT OR IGNORE INTO erased (position) SELECT position FROM events WHERE stream = ? AND revision < ?`, stream, rev); err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	if _, err := tx.ExecContext(context.Background(), `DELETE FROM events WHERE stream = ? AND revision < ?`, stream, rev); err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	if _, err := tx.Stmt(s.upHead).Exec(stream, rev, true); err != nil {
		return events.AppendResult{}, fmt.Errorf("delete %s: %w", stream, err)
	}
	return events.AppendResult{NextRevision: rev, Position: uint64(rc.pos)}, nil
}

// scanRows reads and checks rows in order. It stops at the first damaged
// one, returning the rows before it and a *events.CorruptEventError.
func (s *Store) scanRows(rows *sql.Rows, capHint int) ([]events.Recorded, error) {
	defer rows.Close()
	out := make([]events.Recorded, 0, capHint)
	var r rec
	var sums summer
	for rows.Next() {
		if err := scan(rows, &r); err != nil {
			var ce *events.CorruptEventError
			if errors.As(err, &ce) {
				return out, ce
			}
			return out, fmt.Errorf("scan event after position %d: %w", lastPos(out), err)
		}
		if err := r.check(s.legacyHead, &sums); err != nil {
			return out, &events.CorruptEventError{Stream: r.stream, Revision: uint64(r.rev), Position: uint64(r.pos), Err: err}
		}
		out = append(out, r.recorded())
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

// ReadStream implements events.Store. Besides each record's checksum it
// checks that the stream reads back whole: consecutive revisions up to the
// last one, all of this stream. The rows are found through the (stream,
// revision) index and the columns it holds are read from it, so damage to
// the index shows as a checksum mismatch or a missing revision too.
func (s *Store) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	if e := s.lost.Load(); e != nil {
		return nil, e
	}
	if s.noLog {
		return nil, nil
	}
	if limit <= 0 {
		limit = -1
	}
	// The stream's recorded end and its rows are read in one snapshot: an
	// append committed between two separate reads would look like rows
	// beyond the end.
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.path, err)
	}
	defer tx.Rollback()
	var st streamState
	if s.format2 {
		st, err = s.readHead(ctx, tx, stream)
	} else {
		st, err = scanState(tx.QueryRowContext(ctx, lastOfStream, stream))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.path, err)
	}
	if !st.exists {
		return nil, nil
	}
	if st.deleted {
		return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
	}
	q := `SELECT ` + s.cols + ` FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`
	arg := int64(from)
	// want is the revision the next row must have; step goes with the
	// direction, and wantN is how many rows a whole stream gives.
	want, step, wantN := int64(from), int64(1), int64(st.last)-int64(from)+1
	if dir == events.Backward {
		q = `SELECT ` + s.cols + ` FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`
		if from == events.End || from > st.last {
			arg = 1<<63 - 1
			want = int64(st.last)
		}
		step, wantN = -1, want+1
	}
	if from > st.last && dir == events.Forward {
		wantN = 0
	}
	if limit > 0 {
		wantN = min(wantN, int64(limit))
	}
	rows, err := tx.QueryContext(ctx, q, stream, arg, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", stream, s.path, err)
	}
	out, err := s.scanRows(rows, max(limit, 16))
	// The rows before a damaged one are checked first: a revision missing
	// before it is the first damage.
	for i, r := range out {
		if r.Stream != stream || int64(r.Revision) != want+step*int64(i) || r.IsTombstone() {
			return nil, fmt.Errorf("read %s: %w", stream, &events.CorruptEventError{Stream: stream, Revision: uint64(want + step*int64(i)),
				Position: r.Position, Err: fmt.Errorf("the stream's index leads to %s@%d instead", r.Stream, r.Revision)})
		}
	}
	if err != nil {
		var ce *events.CorruptEventError
		if errors.As(err, &ce) {
			// The stream asked for is the one damaged, whatever the
			// damaged row now says.
			if exp := uint64(want + step*int64(len(out))); ce.Stream != stream || ce.Revision != exp {
				ce.Err = fmt.Errorf("%w (the row names %s@%d)", ce.Err, ce.Stream, ce.Revision)
				ce.Stream, ce.Revision = stream, exp
			}
		}
		return nil, fmt.Errorf("read %s: %w", stream, err)
	}
	if n := int64(len(out)); n < wantN {
		return nil, fmt.Errorf("read %s: %w", stream, &events.CorruptEventError{Stream: stream, Revision: uint64(want + step*n),
			Err: fmt.Errorf("missing from the stream, whose last revision is %d", st.last)})
	} else if n > wantN {
		return nil, fmt.Errorf("read %s: %w", stream, &events.CorruptEventError{Stream: stream, Revision: out[wantN].Revision, Position: out[wantN].Position,
			Err: fmt.Errorf("beyond the stream's recorded end at revision %d", st.last)})
	}
	return out, nil
}

// readHead is headOf for readers.
func (s *Store) readHead(ctx context.Context, tx *sql.Tx, stream string) (streamState, error) {
	st, err := scanHead(tx.QueryRowContext(ctx, streamHead, stream))
	if err != nil || st.exists {
		return st, err
	}
	ix, err := scanState(tx.QueryRowContext(ctx, lastOfStream, stream))
	if err == nil && ix.exists {
		return st, &events.CorruptEventError{Stream: stream, Revision: ix.last,
			Err: fmt.Errorf("the stream's recorded end is lost, its index holds %s", ix)}
	}
	return st, err
}

// ReadAll implements events.Store. Besides each record's checksum it
// checks, in the same snapshot, that every position it skips (up to the
// end of the log when it reaches it) is recorded as erased: a row lost to
// damage is reported, not passed over like an erased one.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Recorded, error) {
	if limit <= 0 {
		limit = 1000
	}
	if e := s.lost.Load(); e != nil {
		return nil, e
	}
	if s.noLog {
		return nil, nil
	}
	out, err := s.readAll(ctx, after, limit)
	if err != nil {
		if ctx.Err() == nil && (errors.Is(err, sql.ErrConnDone) || s.isClosed()) {
			return nil, events.ErrClosed
		}
		return out, fmt.Errorf("read global log in %s: %w", s.path, err)
	}
	return out, nil
}

func (s *Store) readAll(ctx context.Context, after uint64, limit int) ([]events.Recorded, error) {
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+s.cols+` FROM events WHERE position > ? ORDER BY position LIMIT ?`, int64(after), limit)
	if err != nil {
		return nil, fmt.Errorf("after position %d: %w", after, err)
	}
	out, err := s.scanRows(rows, limit)
	var ce *events.CorruptEventError
	if errors.As(err, &ce) && ce.Position != 0 {
		if st, rev, ok := s.locate(ctx, tx, ce.Position); ok && st != ce.Stream {
			// The index still knows whose the row is: trust it over the
			// row itself, whose columns are in doubt.
			ce.Err = fmt.Errorf("%w (the row names %s@%d)", ce.Err, ce.Stream, ce.Revision)
			ce.Stream, ce.Revision = st, rev
		}
	}
	if !s.format2 {
		return out, err
	}
	// Positions are checked up to the last row read, or up to a damaged
	// row (a reader resumes after it), or up to the end of the log.
	upper := lastPos(out)
	switch {
	case ce != nil && ce.Position > 0:
		upper = max(upper, ce.Position-1)
	case err != nil:
	case len(out) < limit:
		seq, serr := allocated(tx)
		if serr != nil {
			return out, serr
		}
		upper = max(upper, uint64(seq))
	}
	if herr := s.checkHoles(ctx, tx, after, upper, out); herr != nil {
		var hole *events.CorruptEventError
		if errors.As(herr, &hole) {
			n := 0
			for n < len(out) && out[n].Position < hole.Position {
				n++
			}
			return out[:n], hole
		}
		return out, herr
	}
	return out, err
}

// checkHoles verifies that every position in (after, upper] is either
// among rs or recorded as erased. Rows out of order are damage too.
func (s *Store) checkHoles(ctx context.Context, tx *sql.Tx, after, upper uint64, rs []events.Recorded) error {
	prev := after
	for _, r := range rs {
		if r.Position <= prev {
			return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position,
				Err: fmt.Errorf("out of order: read after position %d", prev)}
		}
		prev = r.Position
	}
	if upper <= after {
		return nil
	}
	missing := upper - after - uint64(len(rs))
	if missing == 0 {
		return nil
	}
	var erased uint64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM erased WHERE position > ? AND position <= ?`, int64(after), int64(upper)).Scan(&erased); err != nil {
		return fmt.Errorf("erased positions: %w", err)
	}
	if erased == missing {
		return nil
	}
	// Find the first position neither read nor erased.
	held := make(map[uint64]bool, len(rs))
	for _, r := range rs {
		held[r.Position] = true
	}
	rows, err := tx.QueryContext(ctx, `SELECT position FROM erased WHERE position > ? AND position <= ? ORDER BY position`, int64(after), int64(upper))
	if err != nil {
		return fmt.Errorf("erased positions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p uint64
		if err := rows.Scan(&p); err != nil {
			return err
		}
		held[p] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for p := after + 1; p <= upper; p++ {
		if !held[p] {
			ce := &events.CorruptEventError{Position: p, Err: errMissing}
			if st, rev, ok := s.locate(ctx, tx, p); ok {
				ce.Stream, ce.Revision = st, rev
			} else if st, rev, ok := s.locateLost(ctx, tx); ok {
				ce.Stream, ce.Revision = st, rev
			}
			return ce
		}
	}
	return nil // more erased than missing: the erased table names rows that exist
}

// locateLost finds the stream a row went missing from when the index lost
// it too: the one live stream whose rows fall short of its recorded end. It
// returns its first missing revision. It reads the whole index, and answers
// only when exactly one stream is short.
func (s *Store) locateLost(ctx context.Context, q querier) (string, uint64, bool) {
	rows, err := q.QueryContext(ctx, `SELECT e.stream FROM events e JOIN streams s ON s.stream = e.stream
		WHERE s.deleted = 0 GROUP BY e.stream HAVING count(*) != max(s.last) + 1 LIMIT 2`)
	if err != nil {
		return "", 0, false
	}
	var short []string
	for rows.Next() {
		var st string
		if rows.Scan(&st) == nil {
			short = append(short, st)
		}
	}
	rows.Close()
	if len(short) != 1 {
		return "", 0, false
	}
	revs, err := q.QueryContext(ctx, `SELECT revision FROM events WHERE stream = ? ORDER BY revision`, short[0])
	if err != nil {
		return "", 0, false
	}
	defer revs.Close()
	want := uint64(0)
	for revs.Next() {
		var r uint64
		if revs.Scan(&r) != nil || r != want {
			break
		}
		want++
	}
	return short[0], want, true
}

// locate asks the (stream, revision) index, a copy kept apart from the
// rows, whose event position p is. It reads the whole index: it is for
// damaged rows only.
func (s *Store) locate(ctx context.Context, q querier, p uint64) (string, uint64, bool) {
	var stream string
	var rev uint64
	err := q.QueryRowContext(ctx, `SELECT stream, revision FROM events INDEXED BY sqlite_autoindex_events_1 WHERE position = ?`, int64(p)).Scan(&stream, &rev)
	return stream, rev, err == nil
}

// Head implements events.Store.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	if e := s.lost.Load(); e != nil {
		return 0, e
	}
	if s.noLog {
		return 0, nil
	}
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
	// wake is always taken before the read it may make stale, so that no
	// commit goes unnoticed.
	wake := s.changes()
	more, err := s.settleRead(ctx, after, true)
	if err != nil {
		return err
	}
	for {
		if more {
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
				return err
			}
			if len(batch) == page {
				wake = s.changes()
				continue
			}
		}
		// Wait for something to read. A look that finds nothing does not
		// read: a commit landing just after it would be read at once,
		// unsettled.
		for more = false; !more; {
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
				more, err = s.settleRead(ctx, after, false)
			case <-timer.C:
				more, err = s.settleRead(ctx, after, true)
			}
			if err != nil {
				return err
			}
			wake = s.changes()
		}
	}
}

// settleRead says whether a subscription waiting after position after
// should read now. One asked to settle (events.WithSettle) reads only once
// there is something after position after, and that long after it found
// it: a subscription that read the first commit of a burst at once (the
// first read of one just started included, or a read right after a look
// that found nothing) would split the burst; one that settled on an idle
// log, or on a wake by a commit already read, would read at an arbitrary
// phase of the next burst. What this process committed is known without a
// query (acked); look asks the log for the commits of other processes too.
// Without a settle it always reads.
func (s *Store) settleRead(ctx context.Context, after uint64, look bool) (bool, error) {
	d := events.SettleOf(ctx)
	if d <= 0 {
		return true, nil
	}
	if s.acked.Load() <= after {
		if !look {
			return false, nil
		}
		probe, err := s.ReadAll(ctx, after, 1)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, err
		}
		if len(probe) == 0 {
			return false, nil
		}
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-s.closing:
		return false, events.ErrClosed
	case <-time.After(d):
		return true, nil
	}
}

var _ events.Store = (*Store)(nil)
