package projections

import (
	"context"
	"errors"
	"time"
)

// Shared is implemented by projections whose state several processes, on
// several machines, read and write (table projections kept in PostgreSQL):
// in a cluster each is fed by one live runner at a time, the holder of
// its lease.
type Shared interface {
	Shared() bool
}

func isShared(p Projection) bool {
	s, ok := p.(Shared)
	return ok && s.Shared()
}

// Leaser hands out the leases of shared projections: the right to feed
// one. A lease lives in the store the processes share (see
// events/postgres.Locks) and ends by itself when its holder dies.
type Leaser interface {
	// TryLease takes the lease called name; ok is false while another
	// live process holds it.
	TryLease(ctx context.Context, name string) (l Lease, ok bool, err error)
	// LeaseHolder says who holds the lease called name ("" when nobody).
	LeaseHolder(ctx context.Context, name string) (string, error)
}

// Lease is a held lease.
type Lease interface {
	// Lost is closed when the lease ended without being released (its
	// holder's connection to the store broke).
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// LeaseName is the name of projection name's lease.
func LeaseName(name string) string { return "projection:" + name }

// WithLeases makes Run feed each projection whose state is shared (see
// Shared) only while this runner holds its lease from l, so that across
// the processes sharing it one live runner feeds it; the others take the
// lease over within retry (default 1 s) of its holder's end. Projections
// of this process's own (the search index, memory files) are always fed.
// CatchUp is not leased: a command may bring the projections up to the
// log to read its own write; the check that a span continues the stored
// checkpoint, made in the transaction that writes it, keeps every event
// applied once whoever applies it.
func (r *Runner) WithLeases(l Leaser, retry time.Duration) *Runner {
	if retry <= 0 {
		retry = time.Second
	}
	r.leaser, r.leaseRetry = l, retry
	return r
}

// sub is a runner over some of r's projections, keeping r's settings.
func (r *Runner) sub(idx []int) *Runner {
	var ps []Projection
	for _, i := range idx {
		ps = append(ps, r.projs[i])
	}
	s := NewRunner(r.store, r.log, ps...)
	s.page, s.quarantine, s.origins, s.linger = r.page, r.quarantine, r.origins, r.linger
	return s
}

// runLeased feeds the projections this runner holds the leases of (and
// those of its own) until ctx ends, taking leases that become free and
// giving up the ones it loses.
func (r *Runner) runLeased(ctx context.Context) error {
	held := map[int]Lease{}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i, l := range held {
			if err := l.Release(rctx); err != nil {
				r.log.Warn().Err(err).Str("projection", r.projs[i].Name()).Msg("release the projection's lease")
			}
		}
	}()
	// take tries the leases not held; it says whether it took one.
	take := func() bool {
		took := false
		for i, p := range r.projs {
			if _, ok := held[i]; ok || !isShared(p) {
				continue
			}
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			l, ok, err := r.leaser.TryLease(tctx, LeaseName(p.Name()))
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn().Err(err).Str("projection", p.Name()).Msg("cannot reach the projection's lease")
				}
				continue
			}
			if ok {
				held[i], took = l, true
				r.log.Info().Str("projection", p.Name()).Msg("took the projection's lease: feeding it")
			}
		}
		return took
	}
	// lost drops the leases that ended; it says whether one did.
	lost := func() bool {
		any := false
		for i, l := range held {
			select {
			case <-l.Lost():
				delete(held, i)
				any = true
				r.log.Warn().Str("projection", r.projs[i].Name()).Msg("lost the projection's lease: another process feeds it now")
			default:
			}
		}
		return any
	}
	tick := time.NewTicker(r.leaseRetry)
	defer tick.Stop()
	take()
	for {
		var active []int
		for i, p := range r.projs {
			if _, ok := held[i]; ok || !isShared(p) {
				active = append(active, i)
			}
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		if len(active) > 0 {
			sub := r.sub(active)
			go func() { done <- sub.runAll(sctx) }()
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				cancel()
				if len(active) > 0 {
					<-done
				}
				return ctx.Err()
			case err := <-done:
				cancel()
				if err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				break wait
			case <-tick.C:
				if lost() || take() {
					cancel()
					if len(active) > 0 {
						<-done
					}
					break wait
				}
			}
		}
	}
}

// leaseHolder says who feeds projection p: "" for a projection of this
// process's own, or when no lease is recorded.
func (r *Runner) leaseHolder(ctx context.Context, p Projection) (string, error) {
	if r.leaser == nil || !isShared(p) {
		return "", nil
	}
	return r.leaser.LeaseHolder(ctx, LeaseName(p.Name()))
}
