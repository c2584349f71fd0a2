// Package group is the group commit both event stores use: appends queue
// up while one transaction commits, and the writer takes everything
// queued (up to a bound) as the next transaction, so that concurrent
// appends share a commit instead of waiting for one each.
package group

import (
	"context"
	"sync"

	"github.com/hermes-go/hermes/events"
)

// Writer runs commit on groups of queued requests, one group at a time.
type Writer[R any] struct {
	reqs    chan R
	closing <-chan struct{}
	done    chan struct{}
	// mu makes closing and queueing exclusive: once the writer has seen
	// closing, nothing more is queued, so nothing queued is left unread.
	mu     sync.RWMutex
	closed bool
}

// Start runs a writer handing commit up to max queued requests at a time
// until closing is closed; then each request still queued gets refuse.
func Start[R any](max int, closing <-chan struct{}, commit func([]R), refuse func(R)) *Writer[R] {
	w := &Writer[R]{reqs: make(chan R, max), closing: closing, done: make(chan struct{})}
	go w.run(max, commit, refuse)
	return w
}

// Queue hands r to the writer. It fails with ctx's error, or
// events.ErrClosed once the writer is closing, when r could not be queued:
// then r will not be committed. A queued r always is, or is refused.
func (w *Writer[R]) Queue(ctx context.Context, r R) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return events.ErrClosed
	}
	select {
	case w.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return events.ErrClosed
	}
}

// Done is closed when the writer has stopped.
func (w *Writer[R]) Done() <-chan struct{} { return w.done }

func (w *Writer[R]) run(max int, commit func([]R), refuse func(R)) {
	defer close(w.done)
	group := make([]R, 0, max)
	for {
		select {
		case r := <-w.reqs:
			group = append(group[:0], r)
		drain:
			for len(group) < max {
				select {
				case r := <-w.reqs:
					group = append(group, r)
				default:
					break drain
				}
			}
			commit(group)
		case <-w.closing:
			// Queue calls blocked on a full queue return on closing;
			// once they have, none can queue more.
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
			for {
				select {
				case r := <-w.reqs:
					refuse(r)
				default:
					return
				}
			}
		}
	}
}
