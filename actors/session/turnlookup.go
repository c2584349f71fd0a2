package session

import (
	"context"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// TurnState is how far a turn got, as its session's events tell it.
type TurnState struct {
	// Session is the session the turn is in now: the one asked about, or
	// the session compression continued it in.
	Session string
	// Started: its user message was recorded; Completed: TurnCompleted.
	Started, Completed bool
	// Answer is its last assistant text.
	Answer string
}

// LookupTurn finds turn turnID in session id or the sessions compression
// continued it in, so that whoever runs a turn again after a crash (the
// gateway's recovery, a cluster node taking a session over) answers a
// completed turn from the record, continues a started one, and runs one
// that never started.
func LookupTurn(ctx context.Context, store events.Store, id, turnID string) (TurnState, error) {
	st := TurnState{Session: id}
	for range 64 {
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			return st, err
		}
		st.Session = id
		next := ""
		for _, r := range rs {
			if r.TurnID == turnID {
				switch r.Type {
				case schema.TypeUserMessageAdded:
					st.Started = true
				case schema.TypeTurnCompleted:
					st.Completed = true
				case schema.TypeAssistantMessageAdded:
					if p, err := schema.Decode(r.Envelope); err == nil {
						if a, ok := p.(schema.AssistantMessageAdded); ok && a.Content != "" {
							st.Answer = a.Content
						}
					}
				}
			}
			if r.Type == schema.TypeContextCompressed {
				if p, err := schema.Decode(r.Envelope); err == nil {
					if cc, ok := p.(schema.ContextCompressed); ok {
						next = cc.ChildSessionID
					}
				}
			}
		}
		if next == "" || st.Completed {
			return st, nil
		}
		id = next
	}
	return st, nil
}
