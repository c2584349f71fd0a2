// Package group is the group commit both event stores use: appends queue
// up while one transaction commits, and the next transaction takes
// everything queued (up to a bound), so that concurrent appends share a
// commit instead of waiting for one each.
//
// There is no writer goroutine waiting for work: an append that finds no
// commit running commits its own group on its own goroutine, so an append
// to an idle store costs no hand-off to another goroutine and back (two
// wake-ups of a sleeping thread on a busy machine). What queues up behind
// it is committed next, by a goroutine started only then.
package group

import (
	"context"
	"sync"

	"github.com/hermes-go/hermes/events"
)

// Writer runs commit on groups of queued requests, one group at a time.
type Writer[R any] struct {
	max     int
	commit  func([]R)
	refuse  func(R)
	closing <-chan struct{}
	done    chan struct{}
	// slots bounds the requests queued and not yet taken into a group:
	// Queue waits for one, taking a group gives them back.
	slots chan struct{}

	mu     sync.Mutex
	idle   *sync.Cond // signalled when busy turns false
	queue  []R
	busy   bool // a goroutine is committing, and will take what is queued
	closed bool // closing was seen: nothing more is queued or taken
}

// Start returns a writer handing commit up to max queued requests at a
// time until closing is closed; then each request still queued gets
// refuse, once the commit running then (if any) has returned.
func Start[R any](max int, closing <-chan struct{}, commit func([]R), refuse func(R)) *Writer[R] {
	w := &Writer[R]{max: max, commit: commit, refuse: refuse, closing: closing, done: make(chan struct{}), slots: make(chan struct{}, max)}
	w.idle = sync.NewCond(&w.mu)
	go w.close()
	return w
}

// Queue hands r to the writer. It fails with ctx's error, or
// events.ErrClosed once the writer is closing, when r could not be queued:
// then r will not be committed. A queued r always is, or is refused.
//
// When no commit is running, Queue commits r's group before it returns,
// on the caller's goroutine.
func (w *Writer[R]) Queue(ctx context.Context, r R) error {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return events.ErrClosed
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.slots
		return events.ErrClosed
	}
	w.queue = append(w.queue, r)
	if w.busy {
		w.mu.Unlock()
		return nil
	}
	w.busy = true
	if w.commitOne() {
		go w.drain()
	}
	return nil
}

// commitOne takes the next group and commits it; it is called with mu
// held and busy set, and returns with mu released. It reports whether
// more is queued, busy still set: the caller must go on taking groups.
func (w *Writer[R]) commitOne() bool {
	if len(w.queue) == 0 || w.closed {
		w.busy = false
		w.idle.Broadcast()
		w.mu.Unlock()
		return false
	}
	n := min(len(w.queue), w.max)
	g := make([]R, n)
	copy(g, w.queue)
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.mu.Unlock()
	for range n {
		<-w.slots
	}
	w.commit(g)
	w.mu.Lock()
	if len(w.queue) == 0 || w.closed {
		w.busy = false
		w.idle.Broadcast()
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	return true
}

// drain commits groups until nothing is queued.
func (w *Writer[R]) drain() {
	for {
		w.mu.Lock()
		if !w.commitOne() {
			return
		}
	}
}

// close waits for closing, then for the commit running, and refuses what
// is still queued.
func (w *Writer[R]) close() {
	defer close(w.done)
	<-w.closing
	w.mu.Lock()
	w.closed = true
	for w.busy {
		w.idle.Wait()
	}
	rest := w.queue
	w.queue = nil
	w.mu.Unlock()
	for _, r := range rest {
		<-w.slots
		w.refuse(r)
	}
}

// Done is closed when the writer has stopped: closing was closed, the last
// commit returned and everything still queued was refused.
func (w *Writer[R]) Done() <-chan struct{} { return w.done }
