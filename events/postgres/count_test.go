package postgres

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// statements counts the statements the store's connections send, by
// their first words, for tests that a path takes as many round trips as
// it should.
type statements struct {
	mu  sync.Mutex
	all []string
}

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.all = append(c.all, strings.Join(strings.Fields(d.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// since returns the statements sent after the first n.
func (c *statements) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.all[n:]...)
}

func (c *statements) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

// withTracer makes the store's connections report their statements to t.
func withTracer(t pgx.QueryTracer) Option { return func(s *Store) { s.tracer = t } }
