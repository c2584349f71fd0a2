package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// Locks are named, exclusive locks held in the store's database, for the
// processes that share it: which node runs a session, which process feeds
// a projection. Each is a session-level advisory lock on one connection
// that the Locks keep for themselves, so PostgreSQL drops every lock of a
// process the moment that connection ends, however the process ended
// (kill -9 included): a dead holder never blocks anyone. A holder whose
// host dies or loses the network is cut off by TCP keepalives the
// connection asks the server for (about ten seconds), and one that stops
// pinging the server (frozen, stopped) by its idle timeout (20 s). A
// holder whose connection breaks hears so on each lock's Lost.
//
// Beside each lock, the hermes_locks table records who took it, so that a
// refusal can say who holds it, and a lock taken over says which holder
// ended without releasing it. The record is advice; the advisory lock is
// the truth.
type Locks struct {
	cfg   *pgx.ConnConfig
	owner string
	log   zerolog.Logger
	safe  string
	// Ping is how often the connection is checked (default 1 s): when it
	// breaks, every lock it held is reported lost.
	ping time.Duration
	// idle is the server's idle timeout of the lock connection.
	idle time.Duration
	// outage is how long TryLock goes on trying while the server cannot
	// be reached (the store's WithOutageWait).
	outage time.Duration

	mu     sync.Mutex
	conn   *pgx.Conn
	held   map[string]*Lock
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// Lock is a held lock.
type Lock struct {
	l    *Locks
	name string
	key  int64
	prev string
	lost chan struct{}
	once sync.Once
}

// Name is the lock's name.
func (lk *Lock) Name() string { return lk.name }

// Previous is the owner recorded by a holder that ended without releasing
// the lock ("" when it was free and clean).
func (lk *Lock) Previous() string { return lk.prev }

// Lost is closed when the lock is no longer held: its connection broke
// (the server may have handed it to someone else), or it was released.
func (lk *Lock) Lost() <-chan struct{} { return lk.lost }

func (lk *Lock) drop() { lk.once.Do(func() { close(lk.lost) }) }

// Release gives the lock up.
func (lk *Lock) Release(ctx context.Context) error {
	return lk.l.release(ctx, lk)
}

// LockedError is the refusal of a lock another process holds.
type LockedError struct {
	Name string
	// Owner is the holder's record ("" when it could not be read).
	Owner string
}

func (e *LockedError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("lock %s is held by another process", e.Name)
	}
	return fmt.Sprintf("lock %s is held by %s", e.Name, e.Owner)
}

// HeldBy is Owner, for ports that cannot name this type (session.HeldError).
func (e *LockedError) HeldBy() string { return e.Owner }

// ErrLocksClosed is returned by a Locks that was closed.
var ErrLocksClosed = errors.New("locks closed")

// idleTimeout is how long the server keeps the lock connection of a
// process that stopped talking to it (the watcher pings every second while
// locks are held; an idle connection holding none is just made again).
const idleTimeout = 20 * time.Second

// LockKey is the advisory lock key of a lock name.
func LockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("hermes-lock:" + name))
	return int64(h.Sum64())
}

// Locks returns the locks of the store's database, taken in the name of
// owner (what refusals show others: host, pid). They use a connection of
// their own, made on first use; Close them before the store.
func (s *Store) Locks(owner string) *Locks { return s.locks(owner, time.Second, idleTimeout) }

func (s *Store) locks(owner string, ping, idle time.Duration) *Locks {
	l := &Locks{cfg: s.pool.Config().ConnConfig.Copy(), owner: owner, log: s.log, safe: s.safe, ping: ping, idle: idle, outage: s.outage,
		held: map[string]*Lock{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.watch()
	return l
}

// connect makes the lock connection and the owners table (with l.mu held).
func (l *Locks) connect(ctx context.Context) error {
	if l.conn != nil && !l.conn.IsClosed() {
		return nil
	}
	if l.conn != nil {
		// pgx closed it after a failure: the server dropped whatever it
		// held, and the holders must hear so before a new connection
		// makes anything look fine again.
		l.broken(errors.New("the connection holding the locks closed"))
	}
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return fmt.Errorf("locks on %s: %w", l.safe, err)
	}
	// Ask the server to notice a client that vanished without closing:
	// TCP keepalives catch a dead host or a lost network (on TCP only; a
	// unix socket ignores them), and the idle timeout a process that
	// stopped pinging (frozen, stopped), since the watcher pings every
	// second while locks are held. Its locks then go to others.
	setup := `SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3;
		SET idle_session_timeout = '` + fmt.Sprint(l.idle.Milliseconds()) + `ms';
		SELECT pg_advisory_xact_lock(` + fmt.Sprint(migrateLock) + `);
		CREATE TABLE IF NOT EXISTS hermes_locks (name TEXT PRIMARY KEY, owner TEXT NOT NULL, since TIMESTAMPTZ NOT NULL DEFAULT now())`
	if _, err := conn.Exec(ctx, "BEGIN; "+setup+"; COMMIT"); err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("locks on %s: %w", l.safe, err)
	}
	l.conn = conn
	return nil
}

// tryLockSQL takes advisory lock $1 and, when it got it, records $3 as
// the owner of lock name $2; it returns whether it got the lock, the
// owner recorded before ("" for none), and whether the record replaced
// one left (an insert that met a live row updates it: xmax is then set).
const tryLockSQL = `WITH l AS MATERIALIZED (SELECT pg_try_advisory_lock($1) AS got),
	cur AS MATERIALIZED (SELECT owner FROM hermes_locks WHERE name = $2),
	up AS (INSERT INTO hermes_locks (name, owner) SELECT $2, $3 FROM l WHERE l.got
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, since = now()
		RETURNING xmax <> 0 AS replaced)
	SELECT l.got, coalesce((SELECT owner FROM cur), ''), coalesce((SELECT replaced FROM up), false) FROM l`

// TryLock takes the lock called name, or returns a *LockedError when a
// live process (this one included) holds it. A connection found broken is
// made again at once; while the server cannot be reached (a restart, a
// failover) TryLock goes on trying as the store's appends do (see
// WithOutageWait), so a session started during a restart waits it out
// instead of failing its turn.
func (l *Locks) TryLock(ctx context.Context, name string) (*Lock, error) {
	deadline := time.Now().Add(l.outage)
	var backoff time.Duration // the first retry, on a connection found broken, is at once
	for try := 0; ; try++ {
		l.mu.Lock()
		lk, err := l.tryLock(ctx, name)
		l.mu.Unlock()
		var le *LockedError
		if err == nil || errors.As(err, &le) || errors.Is(err, ErrLocksClosed) || !transient(err) ||
			ctx.Err() != nil || (try > 0 && time.Now().Add(backoff).After(deadline)) {
			return lk, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return lk, err
		case <-l.stop:
			return lk, err
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), time.Second)
	}
}

func (l *Locks) tryLock(ctx context.Context, name string) (*Lock, error) {
	if l.closed {
		return nil, ErrLocksClosed
	}
	if _, ok := l.held[name]; ok {
		return nil, &LockedError{Name: name, Owner: l.owner}
	}
	if err := l.connect(ctx); err != nil {
		return nil, err
	}
	key := LockKey(name)
	// One statement (one round trip, one transaction): the lock, the
	// owner recorded before, and the record of the new owner when the
	// lock was taken. Its snapshot is taken before the lock, so the owner
	// it reads may be one that released meanwhile: the previous owner is
	// the one whose record the insert found still there (replaced), a
	// holder that ended without releasing.
	var got, replaced bool
	var owner string
	err := l.conn.QueryRow(ctx, tryLockSQL, key, name, l.owner).Scan(&got, &owner, &replaced)
	if err != nil {
		if l.conn.IsClosed() {
			l.broken(err) // a lock just taken went with the connection
		} else {
			// A session-level advisory lock outlives the failed
			// statement's transaction.
			l.conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, key)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if !got {
		return nil, &LockedError{Name: name, Owner: owner}
	}
	prev := ""
	if replaced {
		prev = owner
	}
	lk := &Lock{l: l, name: name, key: key, prev: prev, lost: make(chan struct{})}
	l.held[name] = lk
	return lk, nil
}

func (l *Locks) release(ctx context.Context, lk *Lock) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[lk.name] != lk {
		return nil // lost or released already
	}
	delete(l.held, lk.name)
	lk.drop()
	if l.conn == nil {
		return nil
	}
	if l.conn.IsClosed() {
		l.broken(errors.New("the connection holding the locks closed"))
		return nil
	}
	// One statement: the record goes, then the lock (the unlock reads
	// the delete's count, so it runs after it). A holder taking it next
	// meets the deleted row (waiting for this commit), not a record to
	// take over.
	_, err := l.conn.Exec(ctx, `WITH d AS (DELETE FROM hermes_locks WHERE name = $1 AND owner = $2 RETURNING 1)
		SELECT pg_advisory_unlock($3) FROM (SELECT count(*) FROM d) AS c`, lk.name, l.owner, lk.key)
	if err != nil {
		l.broken(err)
		return fmt.Errorf("release lock %s: %w", lk.name, err)
	}
	return nil
}

// broken closes a connection that failed, which drops every lock it held
// on the server, and tells their holders (with l.mu held).
func (l *Locks) broken(err error) {
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
	if len(l.held) > 0 {
		l.log.Warn().Err(err).Str("store", l.safe).Int("locks", len(l.held)).Msg("lost the connection holding locks: every lock it held is given up")
	}
	for name, lk := range l.held {
		lk.drop()
		delete(l.held, name)
	}
}

// watch checks the connection while locks are held.
func (l *Locks) watch() {
	defer close(l.done)
	t := time.NewTicker(l.ping)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		switch {
		case l.conn == nil:
		case l.conn.IsClosed():
			l.broken(errors.New("the connection holding the locks closed"))
		default:
			// Pinged even while nothing is held: the server's idle
			// timeout is for processes that stopped, not idle ones.
			ctx, cancel := context.WithTimeout(context.Background(), 3*l.ping+2*time.Second)
			if err := l.conn.Ping(ctx); err != nil {
				l.broken(err)
			}
			cancel()
		}
		l.mu.Unlock()
	}
}

// Holder is a lock's state as the database sees it.
type Holder struct {
	Name  string    `json:"name"`
	Owner string    `json:"owner"`
	Since time.Time `json:"since"`
	// Live says a process holds it now; a record that is not live was
	// left by a holder that ended without releasing.
	Live bool `json:"live"`
}

// Holders lists the recorded locks whose names start with prefix.
func (s *Store) Holders(ctx context.Context, prefix string) ([]Holder, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('hermes_locks') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, owner, since FROM hermes_locks WHERE starts_with(name, $1) ORDER BY name`, prefix)
	if err != nil {
		return nil, err
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Holder, error) {
		var h Holder
		err := r.Scan(&h.Name, &h.Owner, &h.Since)
		return h, err
	})
	if err != nil {
		return nil, err
	}
	for i := range hs {
		// A bigint advisory lock shows in pg_locks as its high and low
		// 32 bits (classid, objid) with objsubid 1.
		k := uint64(LockKey(hs[i].Name))
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = $1 AND objid = $2 AND objsubid = 1)`, uint32(k>>32), uint32(k)).Scan(&hs[i].Live)
		if err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// Close releases every lock and the connection.
func (l *Locks) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	var err error
	if l.conn != nil && !l.conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for name := range l.held {
			if _, e := l.conn.Exec(ctx, `DELETE FROM hermes_locks WHERE name = $1 AND owner = $2`, name, l.owner); e != nil {
				err = e
				break
			}
		}
		cancel()
		err = errors.Join(err, l.conn.Close(context.Background()))
		l.conn = nil
	}
	for name, lk := range l.held {
		lk.drop()
		delete(l.held, name)
	}
	l.mu.Unlock()
	<-l.done
	return err
}
