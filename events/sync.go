package events

import (
	"context"
	"time"
)

type deferSyncKey struct{}

// DeferSync marks the appends made with the returned context as ones whose
// fsync may wait: the store writes them before Append returns (so they
// survive the process being killed, and readers see them at once), but may
// leave them in the operating system's cache until the next append without
// the mark, or a short delay, makes them durable. A power cut in that
// window can lose them; a kill -9 cannot.
//
// The agent uses it for a tool's result, the one event of a step that has
// no write-ahead role: the step's next commit (the model's next message,
// or the turn's end) is durable and carries it to disk. Stores that cannot
// defer a sync ignore the mark and sync as always.
func DeferSync(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferSyncKey{}, true)
}

// SyncDeferred reports whether ctx carries DeferSync's mark.
func SyncDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferSyncKey{}).(bool)
	return v
}

type settleKey struct{}

// WithSettle asks a subscription made with the returned context to wait d
// after it learns of new events before it reads them, so that a burst of
// commits is read in one go instead of one read each. Stores that push
// events rather than poll for them ignore it.
func WithSettle(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, settleKey{}, d)
}

// SettleOf is the wait WithSettle put in ctx (0: none).
func SettleOf(ctx context.Context) time.Duration {
	d, _ := ctx.Value(settleKey{}).(time.Duration)
	return d
}
