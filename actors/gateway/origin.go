package gateway

import (
	"context"
	"fmt"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// OriginOf finds the chat that talks to session id (the one it is bound to
// now, or was last), for a scheduled job created from that chat to deliver
// back to it. It returns nil when no chat ever talked to the session (a
// CLI session). It reads the chat streams, so it is meant for rare
// lookups (creating a job), not for every message.
func OriginOf(ctx context.Context, store events.Store, id string) (*schema.JobOrigin, error) {
	idx, err := store.ReadStream(ctx, ChatIndexStream, events.Forward, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ChatIndexStream, err)
	}
	var found *schema.JobOrigin
	var at uint64
	for _, rec := range idx {
		pl, err := schema.Decode(rec.Envelope)
		if err != nil {
			return nil, &events.CorruptEventError{Stream: rec.Stream, Revision: rec.Revision, Position: rec.Position, Err: err}
		}
		o, ok := pl.(schema.GatewayChatOpened)
		if !ok {
			continue
		}
		rs, err := store.ReadStream(ctx, o.Stream, events.Forward, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", o.Stream, err)
		}
		for _, r := range rs {
			if r.Type != schema.TypeGatewaySessionBound && r.Type != schema.TypeGatewayMessageReceived {
				continue
			}
			pl, err := schema.Decode(r.Envelope)
			if err != nil {
				return nil, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
			}
			sid := ""
			switch e := pl.(type) {
			case schema.GatewaySessionBound:
				sid = e.SessionID
			case schema.GatewayMessageReceived:
				sid = e.SessionID
			}
			// The chat that talked to it last wins (a session resumed
			// from another chat moves with it).
			if sid == id && r.Position > at {
				found, at = &schema.JobOrigin{Platform: o.Platform, Chat: o.Chat, Thread: o.Thread, SessionID: id}, r.Position
			}
		}
	}
	return found, nil
}
