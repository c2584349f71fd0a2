package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/events"
)

// DefaultOutageWait is how long an append or a stream read goes on trying
// while the server cannot be reached (a restart, a failover) before it
// answers with the error.
const DefaultOutageWait = 15 * time.Second

// WithOutageWait sets how long an append or a stream read goes on trying
// while the server cannot be reached (default DefaultOutageWait; 0 answers
// the first failure).
func WithOutageWait(d time.Duration) Option { return func(s *Store) { s.outage = d } }

// settle answers an append whose transaction failed on the connection (the
// server restarting, a connection it killed). The outcome is unknown when
// the failure came at the commit: the server may have committed and then
// gone before saying so. So the store looks the append's last event up
// first — written, the append succeeded — and only then writes it again,
// under the same condition; until the server is back, or s.outage has
// passed, or the caller gives up. Without this, a caller that hears an
// error for an append that was written goes on from a revision behind its
// stream's, and every append it makes after fails.
func (s *Store) settle(r *request, cause error) reply {
	// wrapped: last already names the append (writeAlone's errors do).
	wrapped := false
	fail := func(err error) reply {
		if wrapped {
			return reply{err: err}
		}
		return reply{err: fmt.Errorf("append to %s in %s: %w", r.stream, s.safe, err)}
	}
	deadline := time.Now().Add(s.outage)
	backoff := 100 * time.Millisecond
	last := cause
	for {
		if r.ctx.Err() != nil || s.closed.Load() || time.Now().After(deadline) {
			return fail(last)
		}
		// Give the server a moment: it is restarting.
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return fail(last)
		case <-s.closing:
			return fail(last)
		}
		backoff = min(2*backoff, time.Second)
		res, found, err := s.written(r.ctx, r.stream, r.evs[len(r.evs)-1].ID)
		switch {
		case err != nil:
			if !transient(err) {
				wrapped = false
				return fail(err)
			}
			last, wrapped = err, false
			continue
		case found:
			s.log.Info().Str("stream", r.stream).Msg("append written though its commit was not acknowledged")
			return reply{res: res}
		}
		res, err = s.writeAlone(r.ctx, r.stream, r.expected, r.evs)
		if err == nil {
			return reply{res: res}
		}
		var wrong *events.WrongExpectedVersionError
		if errors.As(err, &wrong) || errors.Is(err, events.ErrStreamDeleted) || !transient(err) {
			return reply{err: err}
		}
		last, wrapped = err, true
	}
}

// written looks event id up in stream: an append whose last event is there
// was written whole.
func (s *Store) written(ctx context.Context, stream, id string) (events.AppendResult, bool, error) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rev, pos int64
	err := s.pool.QueryRow(lctx, `SELECT revision, position FROM hermes_events WHERE stream = $1 AND id = $2`, stream, id).Scan(&rev, &pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.AppendResult{}, false, nil
	}
	if err != nil {
		return events.AppendResult{}, false, err
	}
	return events.AppendResult{NextRevision: uint64(rev), Position: uint64(pos)}, true, nil
}

// retryRead runs read until it succeeds, fails other than on the
// connection, ctx ends, or s.outage passes.
func retryRead[T any](ctx context.Context, s *Store, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(s.outage)
	backoff := 100 * time.Millisecond
	for {
		v, err := read()
		if err == nil || !transient(err) || ctx.Err() != nil || s.closed.Load() || time.Now().Add(backoff).After(deadline) {
			return v, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return v, err
		case <-s.closing:
			return v, err
		}
		backoff = min(2*backoff, time.Second)
	}
}
