package projections

import (
	"context"
	"database/sql"
	"sync"
)

// stmts keeps the statements the models write with prepared on the
// SQLite writer, so that applying a batch does not parse each statement
// again (parsing was an eighth of a chat's CPU). The writer has one
// connection, held by the transaction while it runs, so a statement
// cannot be prepared inside it: a transaction notes the statements it ran
// unprepared, and they are prepared once it has ended, for the next one.
// PostgreSQL's driver keeps its own cache of prepared statements.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// closed: the database is closing; nothing more is prepared.
	closed bool
}

// maxStmts bounds the cache: models write a few dozen distinct statements;
// one built from data (a row count in an IN list, say) must not grow it.
const maxStmts = 256

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

// get returns q's prepared statement, or nil.
func (c *stmts) get(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

// learn prepares the statements a transaction ran unprepared; call it once
// the transaction has ended, holding no lock a transaction may wait for. It
// waits for the writer's connection without holding c.mu: another
// projection's transaction may hold the connection and look a statement up
// meanwhile.
func (c *stmts) learn(ctx context.Context, qs []string) {
	if c == nil {
		return
	}
	for _, q := range qs {
		c.mu.Lock()
		_, have := c.m[q]
		full := c.closed || len(c.m) >= maxStmts
		c.mu.Unlock()
		if full {
			return
		}
		if have {
			continue
		}
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue // run unprepared, and tried again after its next use
		}
		c.mu.Lock()
		if _, have := c.m[q]; have || c.closed || len(c.m) >= maxStmts {
			st.Close()
		} else {
			c.m[q] = st
		}
		c.mu.Unlock()
	}
}

func (c *stmts) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}
