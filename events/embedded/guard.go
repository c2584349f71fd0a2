package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/events"
)

// The guard keeps a store from losing acknowledged events to its files
// being deleted, replaced or cut short underneath it, and from carrying on
// as if nothing happened. SQLite alone does not notice: a process keeps
// writing to a deleted file (whose inode lives on until it closes it), a new
// process creates an empty log where the old one was, and a new connection
// finds a write-ahead log that is not the one the others use.
//
// While a store is open it remembers which files it has open — events.db,
// its write-ahead log and its shared-memory index, by device and inode —
// and events.db's size, and checks them before and after every write
// transaction and every guardEvery: a file gone or replaced, or events.db
// shorter than before, loses the log. Every write transaction also checks
// that the log's identity is the one it opened and that its last position
// has not gone below the highest one this process saw. A lost log stops
// appends and reads with an *events.LogLostError, logged once; where the
// files the process still has open hold the log, a copy is saved beside
// it first (VACUUM INTO through a connection kept open for the purpose).
//
// Across restarts the store's witness file (WithWitness) remembers the log:
// its identity and the highest position known, written at open, at close
// and every witnessEvery while appends come in (never once per append).
// Records of the same home that remember the log on their own
// (WithRemembered: the projections' checkpoints) are consulted at open too.
// An open that finds no log where the witness or those records remember
// one, another log, or a shorter one, fails with the same error, before it
// creates or writes anything. A home where nothing remembers a log opens
// as a new log.

// WithWitness makes the store keep its witness in the file at path (in
// the home, beside events.db, but not named after it, so that a glob
// deleting events.db* spares it): an open finds out if the log it
// remembers is gone.
func WithWitness(path string) Option { return func(s *Store) { s.witnessPath = path } }

// Remembered is what a durable record outside the log says of it: the
// log's identity and the highest position of it the record saw.
type Remembered struct {
	// Source names the record (a file of the home).
	Source   string
	Log      string
	Position uint64
}

// WithRemembered adds records of the home that remember the log (read once
// at open): a log they remember that is missing, or shorter than they
// remember, fails the open. Records of another log are not counted against
// an existing one (the home may have used another store before).
func WithRemembered(fn func(context.Context) ([]Remembered, error)) Option {
	return func(s *Store) { s.remembered = fn }
}

// AcceptLog makes Open take the log as it is, whatever the witness and
// other records remember (a log restored from an older backup, or one
// deleted on purpose), and record it in the witness: what is given up is
// logged.
func AcceptLog() Option { return func(s *Store) { s.accept = true } }

// WithGuardInterval sets how often an open store checks its files when it
// is not writing (it checks around every write transaction anyway).
func WithGuardInterval(d time.Duration) Option { return func(s *Store) { s.guardEvery = d } }

// WithWitnessInterval sets how often at most the witness is rewritten with
// the highest position while appends come in.
func WithWitnessInterval(d time.Duration) Option { return func(s *Store) { s.witnessEvery = d } }

// witness is the witness file's content.
type witness struct {
	Note     string    `json:"note"`
	Log      string    `json:"log"`
	Created  time.Time `json:"created"`
	Position uint64    `json:"position"`
	File     string    `json:"file"`
	Device   uint64    `json:"device"`
	Inode    uint64    `json:"inode"`
	Updated  time.Time `json:"updated"`
}

const witnessNote = "written by hermes: the event log of this home and how far it went; " +
	"an open that finds it missing or shorter stops. Delete this file only to start a new, empty log on purpose " +
	"(or run hermes store accept)."

func readWitness(path string) (*witness, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the event log's witness: %w", err)
	}
	var w witness
	if err := json.Unmarshal(b, &w); err != nil || w.Log == "" {
		return nil, fmt.Errorf("the event log's witness %s is unreadable (%v): restore it, or move it aside to open events.db as it is", path, err)
	}
	return &w, nil
}

// writeWitness replaces the witness file whole (a temporary file synced
// and renamed over it). Another process may write it at the same time: the
// higher position of the same log is kept, and a lower one left by a race
// only makes the next open check less.
func writeWitness(path string, w witness, keepHigher bool) error {
	if keepHigher {
		if old, err := readWitness(path); err == nil && old != nil && old.Log == w.Log && old.Position > w.Position {
			w.Position = old.Position
		}
	}
	w.Note, w.Updated = witnessNote, time.Now().UTC()
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write the event log's witness: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the event log's witness: %w", err)
	}
	return nil
}

// fileID is a file's identity: the device and inode it has.
type fileID struct{ dev, ino uint64 }

func statFile(path string) (fileID, int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, st.Size, nil // Dev is not a uint64 everywhere
}

// guarded is one file an open store watches.
type guarded struct {
	path     string
	id       fileID
	size     int64  // events.db only: its size when last looked at
	gone     string // what its disappearance means
	replaced string
}

// found is what an open finds in events.db before it writes anything.
type found struct {
	log    string // its identity ("" when it has none)
	head   uint64 // the highest position given out
	hasLog bool   // it has an events table
}

// peek reads the log's identity and head without writing: it runs before
// the tables are created.
func peek(ctx context.Context, q querier) (found, error) {
	var f found
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(&n); err != nil {
		return f, err
	}
	if n == 0 {
		return f, nil
	}
	f.hasLog = true
	meta, err := readMeta(ctx, q)
	if err != nil && !isNoSuchTable(err) {
		return f, err
	}
	f.log = meta["log_id"]
	var head int64
	err = q.QueryRowContext(ctx, `SELECT coalesce(max(position), 0) FROM events`).Scan(&head)
	if err != nil {
		return f, err
	}
	var seq int64
	err = q.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)`).Scan(&seq)
	if err != nil && !isNoSuchTable(err) {
		return f, err
	}
	f.head = uint64(max(head, seq))
	return f, nil
}

// loadRemembered reads the witness and the other records at open.
func (s *Store) loadRemembered(ctx context.Context) error {
	if s.witnessPath != "" {
		w, err := readWitness(s.witnessPath)
		if err != nil && !s.accept {
			return err
		}
		s.witness = w
	}
	if s.remembered != nil {
		rs, err := s.remembered(ctx)
		if err != nil {
			return fmt.Errorf("read what the home remembers of its event log: %w", err)
		}
		s.others = rs
	}
	return nil
}

// judge compares what the open found with what is remembered of the log.
// With AcceptLog it logs what is given up instead.
func (s *Store) judge(f found, exists bool) error {
	lost := func(what, source, log string, pos uint64) error {
		e := &events.LogLostError{Path: s.path, What: what, Log: log, Position: pos, Source: source}
		if s.accept {
			s.log.Warn().Str("file", s.path).Str("remembered_by", source).Str("log", log).Uint64("position", pos).
				Str("found_log", f.log).Uint64("found_head", f.head).Msg("event store: accepting the log as it is: events.db " + what)
			return nil
		}
		s.log.Error().Str("file", s.path).Str("remembered_by", source).Str("log", log).Uint64("position", pos).
			Str("found_log", f.log).Uint64("found_head", f.head).Msg("event store: events.db " + what + "; refusing to open it")
		return e
	}
	missing := "is missing"
	if exists {
		missing = "holds no event log"
	}
	if w := s.witness; w != nil {
		var what string
		switch {
		case !f.hasLog:
			what = missing
		case f.log != w.Log:
			what = fmt.Sprintf("holds another log (%s)", orNone(f.log))
		case f.head < w.Position:
			what = fmt.Sprintf("ends at position %d, before what was acknowledged", f.head)
		}
		if what != "" {
			if err := lost(what, s.witnessPath, w.Log, w.Position); err != nil {
				return err
			}
		}
	}
	for _, r := range s.others {
		if r.Position == 0 || r.Log == "" {
			continue
		}
		var what string
		switch {
		case !f.hasLog && s.witness == nil:
			what = missing
		case f.hasLog && r.Log == f.log && f.head < r.Position:
			what = fmt.Sprintf("ends at position %d, before what was acknowledged", f.head)
		}
		if what != "" {
			if err := lost(what, r.Source, r.Log, r.Position); err != nil {
				return err
			}
		}
	}
	return nil
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

// precheck runs before Open touches the file: a log that is remembered
// but missing (or an empty file) is refused before SQLite creates one.
func (s *Store) precheck(ctx context.Context) error {
	if s.witnessPath == "" && s.remembered == nil {
		return nil
	}
	if err := s.loadRemembered(ctx); err != nil {
		return err
	}
	info, err := os.Stat(s.path)
	if err == nil && info.Size() > 0 {
		return nil // judged once it is open (see judgeOpen)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil // SQLite will say what is wrong
	}
	return s.judge(found{}, err == nil)
}

// judgeOpen judges the log of an open file, before the tables are made.
func (s *Store) judgeOpen(ctx context.Context, q querier) error {
	if s.witnessPath == "" && s.remembered == nil {
		return nil
	}
	f, err := peek(ctx, q)
	if err != nil {
		return err
	}
	return s.judge(f, true)
}

// startGuard takes the identities of the files once the store is open,
// records the log in the witness and starts watching.
func (s *Store) startGuard(ctx context.Context) error {
	var err error
	if s.pin, err = s.rdb.Conn(ctx); err != nil {
		return err
	}
	// A read opens the write-ahead log and the shared-memory index, which
	// this connection then holds for the store's lifetime: SQLite deletes
	// them only when the last connection to the file closes, so from now
	// on they stay the same files unless someone else removes them.
	var n int
	if err = s.pin.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n); err != nil {
		return err
	}
	head, err := allocated(s.pin)
	if err != nil {
		return err
	}
	s.acked.Store(uint64(head))
	s.durable.Store(uint64(head))
	for _, g := range []guarded{
		{path: s.path, gone: "was deleted while in use", replaced: "was replaced by another file while in use"},
		{path: s.path + "-wal", gone: "lost its write-ahead log (events.db-wal deleted while in use)", replaced: "had its write-ahead log (events.db-wal) replaced while in use"},
		{path: s.path + "-shm", gone: "lost its shared-memory index (events.db-shm deleted while in use)", replaced: "had its shared-memory index (events.db-shm) replaced while in use"},
	} {
		id, size, err := statFile(g.path)
		if err != nil || id == (fileID{}) {
			continue // not there to watch (or no inodes here)
		}
		g.id, g.size = id, size
		s.guarded = append(s.guarded, g)
	}
	if err := s.recordWitness(true); err != nil {
		return err
	}
	s.watchDone = make(chan struct{})
	go s.watch()
	return nil
}

// recordWitness writes the witness (now, or when witnessEvery has passed
// and the position moved).
func (s *Store) recordWitness(now bool) error {
	if s.witnessPath == "" || s.lost.Load() != nil {
		return nil
	}
	pos := s.durable.Load()
	if !now && (pos == s.witnessPos || time.Since(s.witnessAt) < s.witnessEvery) {
		return nil
	}
	w := witness{Log: s.ident.ID, Created: s.ident.Created, Position: pos, File: s.path}
	if len(s.guarded) > 0 {
		w.Device, w.Inode = s.guarded[0].id.dev, s.guarded[0].id.ino
	}
	if old := s.witness; old != nil && old.Log == w.Log && !s.accept {
		if old.Device == w.Device && old.Inode == w.Inode && old.Position == w.Position {
			s.witnessPos, s.witnessAt = pos, time.Now()
			return nil // nothing new to record: no write
		}
		if old.Device != w.Device || old.Inode != w.Inode {
			s.log.Info().Str("file", s.path).Msg("event store: events.db is another file than last time, holding the same log and no less of it (a copy): carrying on")
		}
	}
	if err := writeWitness(s.witnessPath, w, !s.accept); err != nil {
		return err
	}
	s.witness = &w
	s.witnessPos, s.witnessAt = pos, time.Now()
	return nil
}

// watch checks the files every guardEvery until the store closes or its
// log is lost, and keeps the witness near the head.
func (s *Store) watch() {
	defer close(s.watchDone)
	t := time.NewTicker(s.guardEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		if s.checkFiles() != nil || s.checkContent() != nil {
			return
		}
		if err := s.recordWitness(false); err != nil {
			s.log.Warn().Err(err).Str("file", s.path).Msg("event store: witness not updated")
		}
	}
}

// checkFiles compares the files at the store's paths with the ones it
// opened. It returns the *events.LogLostError of a lost log.
func (s *Store) checkFiles() error {
	if e := s.lost.Load(); e != nil {
		return e
	}
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if e := s.lost.Load(); e != nil {
		return e
	}
	for i := range s.guarded {
		g := &s.guarded[i]
		id, size, err := statFile(g.path)
		var what string
		switch {
		case errors.Is(err, fs.ErrNotExist):
			what = g.gone
		case err != nil:
			continue // cannot look (permissions): SQLite will say
		case id != g.id:
			what = g.replaced
		case i == 0 && size < g.size:
			what = fmt.Sprintf("was truncated while in use (from %d to %d bytes)", g.size, size)
		}
		if what != "" {
			return s.lose(what, true)
		}
		if i == 0 {
			g.size = size
		}
	}
	return nil
}

// checkContent reads the log's identity and head (outside the writer's
// transactions: the watcher's look).
func (s *Store) checkContent() error {
	if e := s.lost.Load(); e != nil {
		return e
	}
	acked := s.acked.Load() // before the read, whose snapshot then holds it
	var id sql.NullString
	var seq int64
	err := s.rdb.QueryRow(`SELECT (SELECT value FROM meta WHERE key = 'log_id'), `+allocatedExpr).Scan(&id, &seq)
	if err != nil {
		return nil // a read that fails says so where it is made
	}
	return s.judgeContent(id.String, seq, acked)
}

// judgeContent loses the log if what a transaction read of it is not the
// log this store opened, or ends before a position it saw.
func (s *Store) judgeContent(id string, seq int64, acked uint64) error {
	switch {
	case id != s.ident.ID:
		s.gmu.Lock()
		defer s.gmu.Unlock()
		return s.lose(fmt.Sprintf("now holds another log (%s)", orNone(id)), false)
	case uint64(seq) < acked:
		s.gmu.Lock()
		defer s.gmu.Unlock()
		return s.lose(fmt.Sprintf("went back from position %d to %d", acked, seq), false)
	}
	s.raiseAcked(uint64(seq))
	return nil
}

// raiseAcked records that the log reaches position p.
func (s *Store) raiseAcked(p uint64) {
	for {
		old := s.acked.Load()
		if p <= old || s.acked.CompareAndSwap(old, p) {
			return
		}
	}
}

// lose records the loss (once), saves what the open files still hold when
// rescue is set (the files at the path are no longer those), and logs it.
// gmu is held.
func (s *Store) lose(what string, rescue bool) error {
	if e := s.lost.Load(); e != nil {
		return e
	}
	e := &events.LogLostError{Path: s.path, What: what, Log: s.ident.ID, Position: s.acked.Load()}
	if rescue {
		s.rescue(e)
	}
	s.lost.Store(e)
	s.log.Error().Str("file", s.path).Str("log", e.Log).Uint64("acknowledged", e.Position).
		Str("rescued", e.Rescued).Str("rescue_error", e.RescueErr).
		Msg("event store: events.db " + what + "; appends stopped: restore it from a backup and run hermes store verify")
	return e
}

// rescue copies the log through the connection kept open since Open,
// which still reads the files this store had: a deleted or replaced
// events.db, a deleted write-ahead log.
func (s *Store) rescue(e *events.LogLostError) {
	if s.pin == nil {
		e.RescueErr = "no connection to copy through"
		return
	}
	name := filepath.Join(filepath.Dir(s.path), fmt.Sprintf("events-rescued-%s-%d.db",
		time.Now().UTC().Format("20060102T150405.000Z"), os.Getpid()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := s.pin.ExecContext(ctx, `VACUUM INTO ?`, name); err != nil {
		os.Remove(name)
		e.RescueErr = err.Error()
		return
	}
	c, err := OpenReadOnly(name)
	if err == nil {
		var head uint64
		head, err = c.Head(ctx)
		c.Close()
		e.RescuedUpTo = head
	}
	if err != nil {
		e.RescueErr = "the copy cannot be read: " + err.Error()
		return
	}
	e.Rescued = name
}

// Lost returns the *events.LogLostError of a store whose log was lost, or
// nil.
func (s *Store) Lost() error {
	if e := s.lost.Load(); e != nil {
		return e
	}
	return nil
}
