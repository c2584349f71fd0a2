package node

import (
	"context"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
)

// turnReader is a store that reads the events of one turn of a stream
// (with the stream's ContextCompressed events) without the rest of it: the
// PostgreSQL store's ReadTurn.
type turnReader interface {
	ReadTurn(ctx context.Context, stream, turn string) ([]events.Recorded, error)
}

// lookupTurn is session.LookupTurn reading, where the store can, only the
// turn's events: a member looks up every turn it is asked to run, and a
// long conversation read whole for each would cost a turn its length.
func lookupTurn(ctx context.Context, store events.Store, id, turn string) (session.TurnState, error) {
	tr, ok := store.(turnReader)
	if !ok || turn == "" {
		return session.LookupTurn(ctx, store, id, turn)
	}
	return session.LookupTurnIn(ctx, func(ctx context.Context, id string) ([]events.Recorded, error) {
		return tr.ReadTurn(ctx, events.SessionStream(id), turn)
	}, id, turn)
}
