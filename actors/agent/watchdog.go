package agent

import (
	"context"
	"sync"
	"time"
)

// Watchdog cancels a streaming call when no chunk arrives for a while: a
// stalled stream is a transient failure, not a hang.
type Watchdog struct {
	mu      sync.Mutex
	timer   *time.Timer
	d       time.Duration
	cancel  context.CancelCauseFunc
	stalled bool
}

// NewWatchdog returns a context that is cancelled with ErrStalled when
// Touch is not called for d. d <= 0 disables it.
func NewWatchdog(ctx context.Context, d time.Duration) (context.Context, *Watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watchdog{d: d, cancel: cancel}
	if d > 0 {
		w.timer = time.AfterFunc(d, func() {
			w.mu.Lock()
			w.stalled = true
			w.mu.Unlock()
			cancel(ErrStalled)
		})
	}
	return ctx, w
}

// Touch records that a chunk arrived.
func (w *Watchdog) Touch() {
	if w.timer != nil {
		w.timer.Reset(w.d)
	}
}

// Stalled reports whether the watchdog fired.
func (w *Watchdog) Stalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stalled
}

// Stop releases the watchdog.
func (w *Watchdog) Stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(nil)
}
