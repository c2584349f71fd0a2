package model

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultStallTimeout is how long a stream may send nothing before it is
// cancelled as stalled.
const DefaultStallTimeout = 60 * time.Second

// DefaultCallTimeout bounds a whole model call, stream included
// (agent.model_call_timeout). The stall watchdog alone cannot end a stream
// whose server keeps it alive with a chunk now and then.
const DefaultCallTimeout = 10 * time.Minute

// Watchdog cancels a streaming call when no chunk arrives for a while, or
// when the call as a whole runs past its deadline: a stalled or endless
// stream is a failure the ladder handles, not a hang.
type Watchdog struct {
	mu       sync.Mutex
	timer    *time.Timer
	deadline *time.Timer
	d        time.Duration
	cancel   context.CancelCauseFunc
	cause    error
}

// NewWatchdog returns a context that is cancelled with ErrStalled when
// Touch is not called for stall, and with ErrCallTimeout once total has
// passed. A duration <= 0 disables its timer.
func NewWatchdog(ctx context.Context, stall, total time.Duration) (context.Context, *Watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watchdog{d: stall, cancel: cancel}
	fire := func(cause error) func() {
		return func() {
			w.mu.Lock()
			if w.cause == nil {
				w.cause = cause
			}
			w.mu.Unlock()
			cancel(cause)
		}
	}
	if stall > 0 {
		w.timer = time.AfterFunc(stall, fire(ErrStalled))
	}
	if total > 0 {
		w.deadline = time.AfterFunc(total, fire(fmt.Errorf("%w (%s)", ErrCallTimeout, total)))
	}
	return ctx, w
}

// Touch records that a chunk arrived.
func (w *Watchdog) Touch() {
	if w.timer != nil {
		w.timer.Reset(w.d)
	}
}

// Stalled reports whether the stall timer fired.
func (w *Watchdog) Stalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause == ErrStalled
}

// Cause is why the watchdog cancelled the call (wrapping ErrStalled or
// ErrCallTimeout), or nil when it did not.
func (w *Watchdog) Cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause
}

// Stop releases the watchdog.
func (w *Watchdog) Stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.deadline != nil {
		w.deadline.Stop()
	}
	w.cancel(nil)
}
