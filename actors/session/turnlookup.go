package session

import (
	"context"
	"time"

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
	// Interrupted is the reason of its TurnInterrupted, if it has one.
	Interrupted string
	// Answer is its last assistant text.
	Answer string
	// Said is every non-empty assistant text of the turn, oldest first:
	// what it said before calling tools, then its answer.
	Said []string
	// Usage is the sum of its model calls' usage.
	Usage schema.Usage
	// First and Last are when its first and last events were recorded.
	First, Last time.Time
}

// LookupTurn finds turn turnID in session id or the sessions compression
// continued it in, so that whoever runs a turn again after a crash (the
// gateway's recovery, a cluster node taking a session over) answers a
// completed turn from the record, continues a started one, and runs one
// that never started.
func LookupTurn(ctx context.Context, store events.Store, id, turnID string) (TurnState, error) {
	return LookupTurnIn(ctx, func(ctx context.Context, id string) ([]events.Recorded, error) {
		return store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	}, id, turnID)
}

// LookupTurnIn is LookupTurn over read, which returns a session's events.
func LookupTurnIn(ctx context.Context, read func(ctx context.Context, id string) ([]events.Recorded, error), id, turnID string) (TurnState, error) {
	st := TurnState{Session: id}
	for range 64 {
		rs, err := read(ctx, id)
		if err != nil {
			return st, err
		}
		st.Session = id
		next := ""
		for _, r := range rs {
			if r.TurnID == turnID {
				if st.First.IsZero() {
					st.First = r.Time
				}
				st.Last = r.Time
				switch r.Type {
				case schema.TypeUserMessageAdded:
					st.Started = true
				case schema.TypeTurnCompleted:
					st.Completed = true
				case schema.TypeTurnInterrupted:
					if p, err := schema.Decode(r.Envelope); err == nil {
						if ti, ok := p.(schema.TurnInterrupted); ok {
							st.Interrupted = ti.Reason
						}
					}
				case schema.TypeAssistantMessageAdded:
					if p, err := schema.Decode(r.Envelope); err == nil {
						if a, ok := p.(schema.AssistantMessageAdded); ok {
							st.Usage = st.Usage.Add(a.Usage)
							if a.Content != "" {
								st.Answer = a.Content
								st.Said = append(st.Said, a.Content)
							}
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
