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

// DefaultFirstByteTimeout bounds the wait for a server's answer to a call
// (agent.first_byte_timeout): a server that takes the request and says
// nothing fails the call after this long, naming the server.
const DefaultFirstByteTimeout = 120 * time.Second

// DefaultNoticeAfter is when a call still waiting for its server's
// answer is first said to be waiting (a shorter first-byte timeout brings
// it forward to a quarter of that timeout).
const DefaultNoticeAfter = 5 * time.Second

// Timeouts bound one streaming call. A duration <= 0 disables its timer.
type Timeouts struct {
	// FirstByte bounds the wait from the request to the server's answer
	// (its response headers). While it runs, Stall does not: a slow first
	// answer is told apart from a stream that stopped.
	FirstByte time.Duration
	// Stall bounds the silence between chunks (and, without FirstByte,
	// before the first one).
	Stall time.Duration
	// Total bounds the whole call.
	Total time.Duration
}

// OrDefaults fills the zero durations of t with the defaults and turns
// the negative ones (disabled, as an adapter's options say) into zero.
func (t Timeouts) OrDefaults() Timeouts {
	pick := func(d, def time.Duration) time.Duration {
		switch {
		case d == 0:
			return def
		case d < 0:
			return 0
		}
		return d
	}
	return Timeouts{FirstByte: pick(t.FirstByte, DefaultFirstByteTimeout), Stall: pick(t.Stall, DefaultStallTimeout), Total: pick(t.Total, DefaultCallTimeout)}
}

// Watchdog cancels a streaming call when its server does not answer in
// time, when no chunk arrives for a while, or when the call as a whole
// runs past its deadline: a silent server, a stalled or an endless stream
// is a failure the ladder handles, not a hang. While it waits for the
// answer it says so on the status line of the call's context (WithStatus).
type Watchdog struct {
	mu       sync.Mutex
	t        Timeouts
	start    time.Time
	host     string
	answered bool
	stall    *time.Timer
	first    *time.Timer
	notice   *time.Timer
	deadline *time.Timer
	status   func(string)
	cancel   context.CancelCauseFunc
	cause    error
}

// NewWatchdog returns a context that is cancelled with ErrNoAnswer when
// Answered is not called within t.FirstByte, with ErrStalled when Touch
// is not called for t.Stall, and with ErrCallTimeout once t.Total has
// passed.
func NewWatchdog(ctx context.Context, t Timeouts) (context.Context, *Watchdog) {
	status := statusFrom(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watchdog{t: t, start: time.Now(), cancel: cancel, status: status, host: "the server"}
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.FirstByte > 0 {
		w.first = time.AfterFunc(t.FirstByte, func() {
			w.mu.Lock()
			cause := fmt.Errorf("no answer from %s in %s: %w", w.host, t.FirstByte, ErrNoAnswer)
			w.mu.Unlock()
			w.fire(cause)
		})
	} else if t.Stall > 0 {
		w.stall = time.AfterFunc(t.Stall, func() { w.fire(ErrStalled) })
	}
	if t.Total > 0 {
		w.deadline = time.AfterFunc(t.Total, func() { w.fire(fmt.Errorf("%w (%s)", ErrCallTimeout, t.Total)) })
	}
	if status != nil {
		after := DefaultNoticeAfter
		if t.FirstByte > 0 {
			after = min(after, t.FirstByte/4)
		}
		var tell func()
		tell = func() {
			w.mu.Lock()
			if w.answered || w.cause != nil {
				w.mu.Unlock()
				return
			}
			msg := fmt.Sprintf("no answer from %s yet (%s)…", w.host, waited(time.Since(w.start)))
			w.notice = time.AfterFunc(6*after, tell)
			w.mu.Unlock()
			w.status(msg)
		}
		w.notice = time.AfterFunc(after, tell)
	}
	return ctx, w
}

// waited rounds how long a call has waited for showing.
func waited(d time.Duration) time.Duration {
	if d >= 2*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

func (w *Watchdog) fire(cause error) {
	w.mu.Lock()
	if w.cause == nil {
		w.cause = cause
	}
	w.mu.Unlock()
	w.cancel(cause)
}

// Sending records the host a request goes to, for the messages about its
// answer.
func (w *Watchdog) Sending(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if host != "" {
		w.host = host
	}
}

// Answered records that the server answered (its response headers
// arrived): the first-byte timer stops and the stall timer starts.
func (w *Watchdog) Answered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answer()
}

func (w *Watchdog) answer() {
	if w.answered {
		return
	}
	w.answered = true
	if w.first != nil {
		w.first.Stop()
	}
	if w.notice != nil {
		w.notice.Stop()
	}
	if w.stall == nil && w.t.Stall > 0 && w.cause == nil {
		w.stall = time.AfterFunc(w.t.Stall, func() { w.fire(ErrStalled) })
	}
}

// Touch records that a chunk arrived (which is an answer too).
func (w *Watchdog) Touch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answer()
	if w.stall != nil {
		w.stall.Reset(w.t.Stall)
	}
}

// Stalled reports whether the stall timer fired.
func (w *Watchdog) Stalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause == ErrStalled
}

// Cause is why the watchdog cancelled the call (wrapping ErrNoAnswer,
// ErrStalled or ErrCallTimeout), or nil when it did not.
func (w *Watchdog) Cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause
}

// Stop releases the watchdog.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	for _, t := range []*time.Timer{w.first, w.stall, w.notice, w.deadline} {
		if t != nil {
			t.Stop()
		}
	}
	w.answered = true // no more notices
	w.mu.Unlock()
	w.cancel(nil)
}

type statusKey struct{}

// WithStatus returns a context whose model calls report what they wait
// for ("no answer from HOST yet (5s)…") to status. The Ladder sets it
// from its Status.
func WithStatus(ctx context.Context, status func(string)) context.Context {
	if status == nil {
		return ctx
	}
	return context.WithValue(ctx, statusKey{}, status)
}

func statusFrom(ctx context.Context) func(string) {
	f, _ := ctx.Value(statusKey{}).(func(string))
	return f
}
