package gatewaytest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// Projections is the read side as cmd/hermes wires it for the API server
// and the dashboard: the real projections (session list, history, lineage,
// costs) and the search index over a store, each caught up to the end of
// the log before it answers. It serves apiserver.Archive and
// dashboard.Reader in tests.
type Projections struct {
	store  events.Store
	dir    string
	mu     sync.Mutex
	db     *projections.DB
	runner *projections.Runner
}

// OpenProjections opens the projections in dir (closed when the test ends).
func OpenProjections(tb testing.TB, store events.Store, dir string) *Projections {
	tb.Helper()
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return &Projections{store: store, dir: dir, db: db,
		runner: projections.NewRunner(store, zerolog.Nop(), db.Projection(sessions.NewModel()), db.Projection(history.NewModel()),
			db.Projection(lineage.NewModel()), db.Projection(costs.NewModel()))}
}

// read catches the projections up, then runs fn, one reader at a time.
func (p *Projections) read(ctx context.Context, fn func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.runner.CatchUp(ctx); err != nil {
		return err
	}
	return fn()
}

func (p *Projections) List(ctx context.Context, limit int) (out []sessions.Summary, err error) {
	err = p.read(ctx, func() (err error) { out, err = sessions.List(ctx, p.db.Reader(), limit); return })
	return out, err
}

func (p *Projections) Get(ctx context.Context, id string) (s sessions.Summary, ok bool, err error) {
	err = p.read(ctx, func() (err error) { s, ok, err = sessions.Get(ctx, p.db.Reader(), id); return })
	return s, ok, err
}

func (p *Projections) History(ctx context.Context, id string) (out []schema.Message, err error) {
	err = p.read(ctx, func() (err error) { out, err = history.Messages(ctx, p.db.Reader(), id); return })
	return out, err
}

func (p *Projections) Lineage(ctx context.Context, id string) (out []lineage.Node, err error) {
	err = p.read(ctx, func() (err error) { out, err = lineage.Tree(ctx, p.db.Reader(), id); return })
	return out, err
}

func (p *Projections) Costs(ctx context.Context, by, since string) (out []costs.Row, err error) {
	err = p.read(ctx, func() (err error) {
		out, err = costs.Totals(ctx, p.db.Reader(), by, since, model.DefaultPrices().CallCost)
		return
	})
	return out, err
}

func (p *Projections) Events(ctx context.Context, id string) ([]events.Recorded, error) {
	return p.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
}

func (p *Projections) Fork(ctx context.Context, id string, at uint64) (string, error) {
	return session.Fork(ctx, p.store, id, at)
}

func (p *Projections) Exists(ctx context.Context, id string) (bool, error) {
	rs, err := p.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	return len(rs) > 0, err
}

// Search opens the index for each query, as the CLI does, so that a
// session_search tool of the rig's sessions can open it between queries.
func (p *Projections) Search(ctx context.Context, q search.Query) (search.Results, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idx, err := search.Open(filepath.Join(p.dir, "search.bleve"))
	if err != nil {
		return search.Results{}, err
	}
	defer idx.Close()
	if _, err := projections.NewRunner(p.store, zerolog.Nop(), idx).CatchUp(ctx); err != nil {
		return search.Results{}, err
	}
	return idx.Search(ctx, q)
}
