// Package projections feeds read models from the global event log. Each
// projection keeps its own checkpoint, stored atomically with its state, so
// that after any crash or restart every event's effect is applied exactly
// once; each can be dropped and rebuilt from the events at any time.
package projections

import (
	"context"
	"errors"
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
	// Damage is set on the stand-in the runner puts where it met a damaged
	// record: a tombstone of the record's stream, so that every projection
	// drops the session whose fold can no longer be trusted.
	Damage *Damage
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

// Span is a stretch of the global log as the runner read it: every event
// with a position in (After, Upto], in order, but those of quarantined
// streams. Log is the identity of the log it was read from ("" when the
// store has none).
type Span struct {
	Log         string
	After, Upto uint64
	Events      []Event
}

// Contiguous is implemented by projections that apply a span only when it
// continues their checkpoint, and check it in the transaction that writes
// their state: a span read before another process reset (or rebuilt) the
// projection is refused with a *GapError instead of applied onto the
// emptied state. Their checkpoint records the identity of the log it counts
// positions of (Origin), so that a replaced log is noticed.
type Contiguous interface {
	ApplySpan(ctx context.Context, s Span) error
	Origin(ctx context.Context) (string, error)
}

// ErrGap is what a *GapError is: the runner re-reads from the stored
// checkpoint.
var ErrGap = errors.New("the events read do not continue the checkpoint")

// GapError reports a span refused because it does not continue the
// projection's stored checkpoint, or was read from another log.
type GapError struct {
	Projection        string
	Checkpoint, After uint64
	Log, SpanLog      string
}

func (e *GapError) Error() string {
	if e.Log != e.SpanLog {
		return fmt.Sprintf("projection %s: events of log %s offered to a checkpoint of log %s", e.Projection, e.SpanLog, e.Log)
	}
	return fmt.Sprintf("projection %s: events after position %d offered to checkpoint %d: %v", e.Projection, e.After, e.Checkpoint, ErrGap)
}

// Is makes errors.Is(err, ErrGap) true.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// Damage is a damaged record the runner met in the log. The runner skips
// the rest of its stream and puts a tombstone in its place.
type Damage struct {
	Stream   string    `json:"stream"`
	Revision uint64    `json:"revision"`
	Position uint64    `json:"position"`
	Reason   string    `json:"reason"`
	Found    time.Time `json:"found"`
}

func (d Damage) String() string {
	return fmt.Sprintf("%s@%d (position %d): %s", d.Stream, d.Revision, d.Position, d.Reason)
}

// Quarantine keeps the damage runners met, per log, so that every process
// skips the same streams and commands can say why a session is missing.
type Quarantine interface {
	// Damaged lists the damage recorded for the log.
	Damaged(ctx context.Context, log string) ([]Damage, error)
	// Quarantine records d (the first damage of its stream counts).
	Quarantine(ctx context.Context, log string, d Damage) error
	// Release forgets every record: a rebuild of every projection judges
	// the log afresh.
	Release(ctx context.Context) error
}

// Origins records the log each projection that does not record it itself
// (one that is not Contiguous) was built from. It is written after the
// projection's own state, so a crash between the two leaves the origin
// unrecorded, and the next span records it.
type Origins interface {
	ProjectionOrigin(ctx context.Context, name string) (string, error)
	SetProjectionOrigin(ctx context.Context, name, log string) error
}

// Identified is implemented by stores whose log has an identity (see
// events/embedded); a store without one is trusted to be the same log.
type Identified interface {
	LogID(ctx context.Context) (string, error)
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

// standIn is the tombstone the runner puts where it met damage; nil when
// the damage cannot be pinned on a stream (nothing can be skipped then) or
// is an event of a type this build does not know, which is no damage: a
// newer Hermes wrote it, and the runner stops rather than skip it.
func standIn(err error) *Event {
	var ce *events.CorruptEventError
	var ute *schema.UnknownTypeError
	if !errors.As(err, &ce) || ce.Stream == "" || ce.Position == 0 || errors.As(err, &ute) {
		return nil
	}
	sid := events.SessionOf(ce.Stream)
	rec := events.Recorded{Envelope: schema.Envelope{Type: events.StreamDeletedType, Version: 1, SessionID: sid, Payload: []byte("{}")},
		Stream: ce.Stream, Revision: ce.Revision, Position: ce.Position}
	return &Event{Recorded: rec, Damage: &Damage{Stream: ce.Stream, Revision: ce.Revision, Position: ce.Position,
		Reason: ce.Err.Error(), Found: time.Now().UTC()}}
}

// Runner feeds a set of projections from a store. A catch-up may run
// beside Run (a command that reads while a chat follows the log): each
// projection serializes its writes, and spans that no longer continue a
// checkpoint are refused and read again.
type Runner struct {
	store  events.Store
	projs  []Projection
	log    zerolog.Logger
	page   int
	wanted map[string]bool // nil: decode everything

	// mu guards bad, badLog and recorded.
	mu         sync.Mutex
	quarantine Quarantine
	origins    Origins
	// recorded is the origin last stored for each projection (by index)
	// that is not Contiguous, so that it is written only when it changes.
	recorded map[int]string
	// bad maps each quarantined stream of log badLog to the position of
	// its first damage; loaded once per log.
	bad    map[string]uint64
	badLog *string

	// leaser, when set, makes Run feed a projection whose state several
	// processes share only while this runner holds its lease.
	leaser     Leaser
	leaseRetry time.Duration

	// linger is how long Run gathers events after the first of a batch
	// before applying it (WithLinger).
	linger time.Duration
}

// NewRunner returns a runner of projs over store.
func NewRunner(store events.Store, log zerolog.Logger, projs ...Projection) *Runner {
	r := &Runner{store: store, projs: projs, log: log, page: 4096, wanted: map[string]bool{}, bad: map[string]uint64{}, recorded: map[int]string{}}
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

// WithLinger makes Run, once an event arrives, gather the events that follow
// for up to d before applying them in one transaction: a process appending
// in bursts (an agent's steps, milliseconds apart with a fast model) pays for
// one projection write per burst instead of one per commit, at the price of
// read models that lag the log by up to d.
func (r *Runner) WithLinger(d time.Duration) *Runner {
	r.linger = d
	return r
}

// WithQuarantine makes the runner record the damage it meets in q, and skip
// the streams q holds, so that every process agrees on them. Without it the
// runner remembers damage for its own lifetime only.
func (r *Runner) WithQuarantine(q Quarantine) *Runner {
	r.quarantine = q
	return r
}

// WithOrigins makes the runner record in o the log each projection that is
// not Contiguous was built from, so that a replaced log rebuilds it too.
// Without it such projections are only checked against the log's head.
func (r *Runner) WithOrigins(o Origins) *Runner {
	r.origins = o
	return r
}

// reset resets projection i and forgets its recorded origin.
func (r *Runner) reset(ctx context.Context, i int) error {
	p := r.projs[i]
	if err := p.Reset(ctx); err != nil {
		return fmt.Errorf("projection %s: reset: %w", p.Name(), err)
	}
	if _, ok := p.(Contiguous); !ok && r.origins != nil {
		r.mu.Lock()
		delete(r.recorded, i)
		r.mu.Unlock()
		if err := r.origins.SetProjectionOrigin(ctx, p.Name(), ""); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
	}
	return nil
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

func (r *Runner) logID(ctx context.Context) (string, error) {
	if id, ok := r.store.(Identified); ok {
		return id.LogID(ctx)
	}
	return "", nil
}

// reconcile rebuilds from scratch every projection whose checkpoint cannot
// belong to the log as it is now: one recorded with another log's identity
// (events.db was replaced), or one beyond the log's head (events.db was
// emptied or replaced by a shorter one). Checkpoints are read before the
// head, so a projection another process moves meanwhile is never mistaken
// for one ahead of the log. It returns the log's identity and head, and
// loads the quarantined streams of that log.
func (r *Runner) reconcile(ctx context.Context) (string, uint64, error) {
	cps := make([]uint64, len(r.projs))
	origins := make([]string, len(r.projs))
	for i, p := range r.projs {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			return "", 0, fmt.Errorf("projection %s: checkpoint: %w", p.Name(), err)
		}
		cps[i] = cp
		if c, ok := p.(Contiguous); ok {
			if origins[i], err = c.Origin(ctx); err != nil {
				return "", 0, fmt.Errorf("projection %s: %w", p.Name(), err)
			}
		} else if r.origins != nil {
			if origins[i], err = r.origins.ProjectionOrigin(ctx, p.Name()); err != nil {
				return "", 0, fmt.Errorf("projection %s: %w", p.Name(), err)
			}
			r.mu.Lock()
			r.recorded[i] = origins[i]
			r.mu.Unlock()
		}
	}
	head, err := r.store.Head(ctx)
	if err != nil {
		return "", 0, err
	}
	id, err := r.logID(ctx)
	if err != nil {
		return "", 0, err
	}
	for i, p := range r.projs {
		var why string
		switch {
		case id != "" && origins[i] != "" && origins[i] != id:
			why = "the event log was replaced: the projection was built from another log"
		case cps[i] > head:
			why = "the event log ends before the projection's checkpoint: it was emptied or replaced"
		default:
			continue
		}
		r.log.Warn().Str("projection", p.Name()).Uint64("checkpoint", cps[i]).Uint64("head", head).
			Str("log", id).Str("checkpoint_log", origins[i]).Msg(why + "; rebuilding it from the log")
		if err := r.reset(ctx, i); err != nil {
			return "", 0, err
		}
	}
	r.mu.Lock()
	stale := r.badLog == nil || *r.badLog != id
	r.mu.Unlock()
	if stale {
		var ds []Damage
		if r.quarantine != nil {
			if ds, err = r.quarantine.Damaged(ctx, id); err != nil {
				return "", 0, fmt.Errorf("quarantine: %w", err)
			}
		}
		r.mu.Lock()
		clear(r.bad)
		for _, d := range ds {
			r.bad[d.Stream] = d.Position
		}
		r.badLog = &id
		r.mu.Unlock()
	}
	return id, head, nil
}

// apply hands a span to every projection that has not yet seen all of it.
// A Contiguous projection checks the span continues its checkpoint as it
// writes; another one is checked against what this runner last saw of it
// (a window remains between check and write: such projections must not be
// rebuilt beside a live runner).
func (r *Runner) apply(ctx context.Context, cps []uint64, sp Span) error {
	for i, p := range r.projs {
		if cps[i] >= sp.Upto {
			continue
		}
		if c, ok := p.(Contiguous); ok {
			if err := c.ApplySpan(ctx, sp); err != nil {
				return fmt.Errorf("projection %s: %w", p.Name(), err)
			}
			cps[i] = sp.Upto
			continue
		}
		if len(sp.Events) == 0 || sp.Events[len(sp.Events)-1].Position <= cps[i] {
			continue
		}
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			return fmt.Errorf("projection %s: checkpoint: %w", p.Name(), err)
		}
		if cp < cps[i] {
			return &GapError{Projection: p.Name(), Checkpoint: cp, After: cps[i]}
		}
		if err := p.Apply(ctx, sp.Events); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
		cps[i] = sp.Events[len(sp.Events)-1].Position
		r.mu.Lock()
		known := r.recorded[i] == sp.Log
		r.mu.Unlock()
		if r.origins != nil && sp.Log != "" && !known {
			if err := r.origins.SetProjectionOrigin(ctx, p.Name(), sp.Log); err != nil {
				return fmt.Errorf("projection %s: %w", p.Name(), err)
			}
			r.mu.Lock()
			r.recorded[i] = sp.Log
			r.mu.Unlock()
		}
	}
	return nil
}

// screen drops from evs the events of quarantined streams (their
// tombstones excepted) and records the damage a stand-in reports. A
// projection already past new damage holds the stream's state from before
// it: it is reset, and screen returns ErrGap so that the runner starts
// again from the checkpoints.
func (r *Runner) screen(ctx context.Context, log string, cps []uint64, evs []Event) ([]Event, error) {
	out := evs[:0]
	reset := false
	for _, ev := range evs {
		if d := ev.Damage; d != nil {
			r.mu.Lock()
			at, known := r.bad[d.Stream]
			if !known || d.Position < at {
				r.bad[d.Stream] = d.Position
			}
			r.mu.Unlock()
			if !known {
				r.log.Warn().Str("stream", d.Stream).Uint64("revision", d.Revision).Uint64("position", d.Position).Str("damage", d.Reason).
					Msg("damaged event in the log: its session is left out of every projection (hermes store verify shows the damage)")
				if r.quarantine != nil {
					if err := r.quarantine.Quarantine(ctx, log, *d); err != nil {
						return nil, fmt.Errorf("quarantine %s: %w", d.Stream, err)
					}
				}
				for i := range r.projs {
					if cps[i] >= d.Position {
						if err := r.reset(ctx, i); err != nil {
							return nil, err
						}
						cps[i], reset = 0, true
					}
				}
			}
			out = append(out, ev)
			continue
		}
		r.mu.Lock()
		at, bad := r.bad[ev.Stream]
		r.mu.Unlock()
		if bad && ev.Position > at && !ev.IsTombstone() {
			continue
		}
		out = append(out, ev)
	}
	if reset {
		return nil, &GapError{Projection: "(projections past new damage)"}
	}
	return out, nil
}

// readSpan reads and decodes the events with positions in (lo, hi]. A
// damaged record becomes a stand-in tombstone and the read goes on after
// it; damage that cannot be pinned on a stream stops the read.
func (r *Runner) readSpan(ctx context.Context, lo, hi uint64) ([]Event, error) {
	var out []Event
	for cur := lo; cur < hi; {
		// Positions are unique, so (cur, hi] holds at most page events:
		// they are all among the first page after cur.
		rs, err := r.store.ReadAll(ctx, cur, r.page)
		for _, rec := range rs {
			if rec.Position > hi {
				break
			}
			ev, derr := decode(rec, r.wanted)
			if derr != nil {
				si := standIn(derr)
				if si == nil {
					return nil, derr
				}
				ev = *si
			}
			out = append(out, ev)
			cur = rec.Position
		}
		if err == nil {
			break
		}
		si := standIn(err)
		if si == nil || si.Position <= cur {
			return nil, err
		}
		if si.Position <= hi {
			out = append(out, *si)
		}
		cur = si.Position
	}
	return out, nil
}

type page struct {
	lo, hi uint64
	batch  []Event
	err    error
}

// readers is how many goroutines read and decode pages ahead of the one
// applying them; inFlight bounds the pages held in memory.
const (
	readers  = 2
	inFlight = 4
)

// maxRestarts bounds how many times one CatchUp starts again because
// another process reset or moved a projection under it.
const maxRestarts = 100

// CatchUp applies everything in the log up to its end as of the call, and
// returns the position reached. Pages are read and decoded ahead, in
// parallel, while the current one is applied; they are applied strictly in
// log order. It does not chase events appended meanwhile: under a writer
// faster than the projections it would never return (Run follows the log
// live). When another process resets a projection meanwhile (a rebuild),
// the spans read before are refused and CatchUp starts again from the
// stored checkpoints.
func (r *Runner) CatchUp(ctx context.Context) (uint64, error) {
	for attempt := 0; ; attempt++ {
		pos, err := r.catchUp(ctx)
		if errors.Is(err, ErrGap) && attempt < maxRestarts && ctx.Err() == nil {
			r.log.Debug().Err(err).Msg("projections: reading again from the stored checkpoints")
			continue
		}
		return pos, err
	}
}

func (r *Runner) catchUp(ctx context.Context) (uint64, error) {
	log, head, err := r.reconcile(ctx)
	if err != nil {
		return 0, err
	}
	cps, after, err := r.checkpoints(ctx)
	if err != nil || head <= after {
		return after, err
	}
	return r.catchUpTo(ctx, log, cps, after, head)
}

// catchUpTo applies the events with positions in (after, head].
func (r *Runner) catchUpTo(ctx context.Context, log string, cps []uint64, after, head uint64) (uint64, error) {
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
				batch, err := r.readSpan(ctx, j.lo, j.hi)
				j.out <- page{j.lo, j.hi, batch, err}
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
		batch, err := r.screen(ctx, log, cps, p.batch)
		if err != nil {
			return after, err
		}
		if err := r.apply(ctx, cps, Span{Log: log, After: p.lo, Upto: p.hi, Events: batch}); err != nil {
			return after, err
		}
		after = p.hi
	}
	if err := ctx.Err(); err != nil {
		return after, err
	}
	return head, nil
}

// Run keeps the projections up to date until ctx ends: it catches up, then
// follows the log live, applying whatever has arrived as one span. Damage
// met live and spans refused because another process reset a projection
// send it back to catching up. Its end by ctx is no failure: it returns
// ctx's error and logs nothing. With leases (WithLeases), a projection
// whose state is shared is fed only while this runner holds its lease.
func (r *Runner) Run(ctx context.Context) error {
	if r.leaser != nil {
		for _, p := range r.projs {
			if isShared(p) {
				return r.runLeased(ctx)
			}
		}
	}
	return r.runAll(ctx)
}

// runAll feeds every projection of the runner until ctx ends.
func (r *Runner) runAll(ctx context.Context) error {
	for {
		err := r.follow(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ce *events.CorruptEventError
		if errors.Is(err, ErrGap) || (errors.As(err, &ce) && standIn(err) != nil) {
			r.log.Debug().Err(err).Msg("projections: catching up again")
			continue
		}
		r.log.Error().Err(err).Msg("projection failed; stopping the runner")
		return err
	}
}

// follow catches up and then applies live spans until something goes wrong.
func (r *Runner) follow(ctx context.Context) error {
	after, err := r.CatchUp(ctx)
	if err != nil {
		return err
	}
	log, err := r.logID(ctx)
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
	if r.linger > 0 {
		// The subscription waits as long before reading: a burst is read
		// in one query, not one per commit.
		sctx = events.WithSettle(sctx, r.linger)
	}
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
			// What was fed before the error is applied by the next
			// catch-up.
			return err
		case ev := <-feed:
			batch = append(batch[:0], ev)
			var until <-chan time.Time
			var timer *time.Timer
			if r.linger > 0 {
				timer = time.NewTimer(r.linger)
				until = timer.C
			}
		more:
			for len(batch) < r.page {
				select {
				case ev := <-feed:
					batch = append(batch, ev)
					continue
				default:
				}
				if until == nil {
					break
				}
				select {
				case ev := <-feed:
					batch = append(batch, ev)
				case <-until:
					break more
				case <-ctx.Done():
					timer.Stop()
					return ctx.Err()
				}
			}
			if timer != nil {
				timer.Stop()
			}
			upto := batch[len(batch)-1].Position
			evs, err := r.screen(ctx, log, cps, batch)
			if err != nil {
				return err
			}
			if err := r.apply(ctx, cps, Span{Log: log, After: after, Upto: upto, Events: evs}); err != nil {
				return err
			}
			after = upto
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
// rebuilds it from the whole log. A runner of another process feeding the
// same projections meanwhile has its spans refused and reads again from
// the reset checkpoint (see Contiguous). Rebuilding every projection
// forgets the quarantine: damage still there is met and recorded again.
func (r *Runner) Rebuild(ctx context.Context, name string) error {
	var targets []int
	if name != "" {
		if _, err := r.Find(name); err != nil {
			return err
		}
	} else if r.quarantine != nil {
		if err := r.quarantine.Release(ctx); err != nil {
			return fmt.Errorf("quarantine: %w", err)
		}
		r.mu.Lock()
		r.badLog = nil
		r.mu.Unlock()
	}
	for i, p := range r.projs {
		if name == "" || p.Name() == name {
			targets = append(targets, i)
		}
	}
	for _, i := range targets {
		if err := r.reset(ctx, i); err != nil {
			return err
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
	// FedBy is the holder of the lease of a shared projection (see
	// WithLeases): the process whose runner feeds it ("" when none does).
	FedBy string `json:"fed_by,omitempty"`
}

// Status reports each projection's checkpoint against the log's head,
// after dropping those that belong to another log (see CatchUp).
func (r *Runner) Status(ctx context.Context) ([]Status, error) {
	if _, _, err := r.reconcile(ctx); err != nil {
		return nil, err
	}
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
		if st.FedBy, err = r.leaseHolder(ctx, p); err != nil {
			return nil, fmt.Errorf("projection %s: lease: %w", p.Name(), err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Damaged lists the damage the runner has met in the current log (with a
// quarantine, that of every process).
func (r *Runner) Damaged(ctx context.Context) ([]Damage, error) {
	id, err := r.logID(ctx)
	if err != nil {
		return nil, err
	}
	if r.quarantine != nil {
		return r.quarantine.Damaged(ctx, id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Damage
	for st, pos := range r.bad {
		out = append(out, Damage{Stream: st, Position: pos})
	}
	return out, nil
}
