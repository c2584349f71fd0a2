// Package projections feeds read models from the global event log. Each
// projection keeps its own checkpoint, stored atomically with its state, so
// that after any crash or restart every event's effect is applied exactly
// once; each can be dropped and rebuilt from the events at any time.
package projections

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Event is a recorded event with its payload decoded once for every
// projection. Payload is nil for a tombstone, and for a type that no
// projection of the runner reads (see Selective).
type Event struct {
	events.Recorded
	Payload schema.Payload
}

// Selective is implemented by projections that read the payloads of only
// some event types (they may still look at every event's Type). The runner
// decodes a payload only when some projection reads it.
type Selective interface {
	PayloadTypes() []string
}

// Projection is a read model fed from the global log.
type Projection interface {
	// Name identifies the projection in status and rebuild commands.
	Name() string
	// Checkpoint is the position of the last event applied (0: none).
	Checkpoint(ctx context.Context) (uint64, error)
	// Apply applies the events of batch whose positions are above the
	// stored checkpoint and advances the checkpoint, all or nothing.
	Apply(ctx context.Context, batch []Event) error
	// Reset drops everything derived and sets the checkpoint to 0.
	Reset(ctx context.Context) error
}

// Decode turns a recorded event into a projection event, naming the stream
// and position of anything it cannot read.
func Decode(r events.Recorded) (Event, error) {
	return decode(r, nil)
}

// decode decodes r's payload when wanted is nil or holds its type; an event
// of an unknown type or version is an error either way.
func decode(r events.Recorded, wanted map[string]bool) (Event, error) {
	if r.IsTombstone() {
		return Event{Recorded: r}, nil
	}
	if wanted != nil && !wanted[r.Type] {
		if err := schema.Check(r.Envelope); err != nil {
			return Event{}, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		return Event{Recorded: r}, nil
	}
	p, err := schema.Decode(r.Envelope)
	if err != nil {
		return Event{}, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
	}
	return Event{Recorded: r, Payload: p}, nil
}

// Runner feeds a set of projections from a store. Its methods are meant to
// be called from one goroutine at a time.
type Runner struct {
	store  events.Store
	projs  []Projection
	log    zerolog.Logger
	page   int
	wanted map[string]bool // nil: decode everything
}

// NewRunner returns a runner of projs over store.
func NewRunner(store events.Store, log zerolog.Logger, projs ...Projection) *Runner {
	r := &Runner{store: store, projs: projs, log: log, page: 4096, wanted: map[string]bool{}}
	for _, p := range projs {
		sel, ok := p.(Selective)
		if !ok {
			r.wanted = nil
			break
		}
		for _, t := range sel.PayloadTypes() {
			r.wanted[t] = true
		}
	}
	return r
}

// Projections lists the runner's projections.
func (r *Runner) Projections() []Projection { return r.projs }

// Find returns the projection called name.
func (r *Runner) Find(name string) (Projection, error) {
	var names []string
	for _, p := range r.projs {
		if p.Name() == name {
			return p, nil
		}
		names = append(names, p.Name())
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no projection named %q (have %v)", name, names)
}

func (r *Runner) checkpoints(ctx context.Context) ([]uint64, uint64, error) {
	cps := make([]uint64, len(r.projs))
	low := ^uint64(0)
	for i, p := range r.projs {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("projection %s: checkpoint: %w", p.Name(), err)
		}
		cps[i] = cp
		low = min(low, cp)
	}
	if len(r.projs) == 0 {
		low = 0
	}
	return cps, low, nil
}

// apply hands a decoded batch to every projection that has not yet seen
// all of it.
func (r *Runner) apply(ctx context.Context, cps []uint64, batch []Event) error {
	if len(batch) == 0 {
		return nil
	}
	last := batch[len(batch)-1].Position
	for i, p := range r.projs {
		if cps[i] >= last {
			continue
		}
		if err := p.Apply(ctx, batch); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
		cps[i] = last
	}
	return nil
}

func (r *Runner) decodeAll(rs []events.Recorded) ([]Event, error) {
	out := make([]Event, len(rs))
	for i, rec := range rs {
		ev, err := decode(rec, r.wanted)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

type page struct {
	batch []Event
	err   error
}

// readers is how many goroutines read and decode pages ahead of the one
// applying them; inFlight bounds the pages held in memory.
const (
	readers  = 2
	inFlight = 4
)

// CatchUp applies everything in the log up to its end as of the call, and
// returns the position reached. Pages are read and decoded ahead, in
// parallel, while the current one is applied; they are applied strictly in
// log order. It does not chase events appended meanwhile: under a writer
// faster than the projections it would never return (Run follows the log
// live).
func (r *Runner) CatchUp(ctx context.Context) (uint64, error) {
	cps, after, err := r.checkpoints(ctx)
	if err != nil {
		return 0, err
	}
	head, err := r.store.Head(ctx)
	if err != nil || head <= after {
		return after, err
	}
	return r.catchUpTo(ctx, cps, after, head)
}

// catchUpTo applies the events with positions in (after, head].
func (r *Runner) catchUpTo(ctx context.Context, cps []uint64, after, head uint64) (uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	type job struct {
		lo, hi uint64
		out    chan page
	}
	jobs := make(chan job)
	order := make(chan chan page, inFlight)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(jobs)
		size := uint64(r.page)
		for lo := after; lo < head; lo += size {
			j := job{lo: lo, hi: min(lo+size, head), out: make(chan page, 1)}
			select {
			case order <- j.out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// Positions are unique, so (lo, hi] holds at most page
				// events: they are all among the first page after lo.
				rs, err := r.store.ReadAll(ctx, j.lo, r.page)
				n := 0
				for n < len(rs) && rs[n].Position <= j.hi {
					n++
				}
				var batch []Event
				if err == nil {
					batch, err = r.decodeAll(rs[:n])
				}
				j.out <- page{batch, err}
			}
		}()
	}
	for out := range order {
		var p page
		select {
		case p = <-out:
		case <-ctx.Done():
			return after, ctx.Err()
		}
		if p.err != nil {
			return after, p.err
		}
		if len(p.batch) == 0 {
			continue
		}
		if err := r.apply(ctx, cps, p.batch); err != nil {
			return after, err
		}
		after = p.batch[len(p.batch)-1].Position
	}
	if err := ctx.Err(); err != nil {
		return after, err
	}
	return head, nil
}

// Run keeps the projections up to date until ctx ends: it catches up, then
// follows the log live, applying whatever has arrived as one batch.
func (r *Runner) Run(ctx context.Context) error {
	after, err := r.CatchUp(ctx)
	if err != nil {
		return err
	}
	cps, _, err := r.checkpoints(ctx)
	if err != nil {
		return err
	}
	feed := make(chan Event, r.page)
	subErr := make(chan error, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		subErr <- r.store.SubscribeAll(sctx, after, func(rec events.Recorded) error {
			ev, err := decode(rec, r.wanted)
			if err != nil {
				return err
			}
			select {
			case feed <- ev:
				return nil
			case <-sctx.Done():
				return sctx.Err()
			}
		})
	}()
	batch := make([]Event, 0, r.page)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-subErr:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		case ev := <-feed:
			batch = append(batch[:0], ev)
		more:
			for len(batch) < r.page {
				select {
				case ev := <-feed:
					batch = append(batch, ev)
				default:
					break more
				}
			}
			if err := r.apply(ctx, cps, batch); err != nil {
				r.log.Error().Err(err).Msg("projection failed; stopping the runner")
				return err
			}
		}
	}
}

// WaitFor blocks until every projection has applied position pos or ctx
// ends. It is for callers that just appended and want to read their write.
func (r *Runner) WaitFor(ctx context.Context, pos uint64) error {
	for {
		_, low, err := r.checkpoints(ctx)
		if err != nil {
			return err
		}
		if low >= pos {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Rebuild drops the named projection (every one when name is "") and
// rebuilds it from the whole log.
func (r *Runner) Rebuild(ctx context.Context, name string) error {
	targets := r.projs
	if name != "" {
		p, err := r.Find(name)
		if err != nil {
			return err
		}
		targets = []Projection{p}
	}
	for _, p := range targets {
		if err := p.Reset(ctx); err != nil {
			return fmt.Errorf("projection %s: reset: %w", p.Name(), err)
		}
	}
	_, err := r.CatchUp(ctx)
	return err
}

// Status is one projection's progress.
type Status struct {
	Name       string `json:"name"`
	Checkpoint uint64 `json:"checkpoint"`
	Head       uint64 `json:"head"`
	// Behind counts positions, not events: erased events leave holes.
	Behind uint64 `json:"behind"`
}

// Status reports each projection's checkpoint against the log's head.
func (r *Runner) Status(ctx context.Context) ([]Status, error) {
	head, err := r.store.Head(ctx)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, p := range r.projs {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			return nil, fmt.Errorf("projection %s: %w", p.Name(), err)
		}
		st := Status{Name: p.Name(), Checkpoint: cp, Head: head}
		if head > cp {
			st.Behind = head - cp
		}
		out = append(out, st)
	}
	return out, nil
}
