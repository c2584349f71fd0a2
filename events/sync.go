package events

import "context"

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
