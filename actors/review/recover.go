package review

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Entry is one review as the "reviews" stream tells it.
type Entry struct {
	schema.ReviewStarted
	// Finished is its end (nil: it runs, or was cut short).
	Finished *schema.ReviewFinished
	// Undone is the person's undo of it, if any.
	Undone *schema.ReviewUndone
	// Time is when it started.
	Time time.Time
}

// List reads every review, oldest first.
func List(ctx context.Context, store events.Store) ([]*Entry, error) {
	rs, err := store.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	byID := map[string]*Entry{}
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		switch e := p.(type) {
		case schema.ReviewStarted:
			en := &Entry{ReviewStarted: e, Time: r.Time}
			byID[e.ReviewID] = en
			out = append(out, en)
		case schema.ReviewFinished:
			if en := byID[e.ReviewID]; en != nil {
				en.Finished = &e
			}
		case schema.ReviewUndone:
			if en := byID[e.ReviewID]; en != nil {
				en.Undone = &e
			}
		}
	}
	return out, nil
}

// Recover closes the reviews a process left unfinished (it was killed or
// crashed during them) as abandoned: the review's session gets the end of
// its open turn and its SessionEnded, the "reviews" stream its
// ReviewFinished with what it had changed by then (so that it can be
// undone). A review another live process still runs is left alone. It
// returns the reviews it closed.
func (r *Reviewer) Recover(ctx context.Context) ([]string, error) {
	all, err := List(ctx, r.cfg.Store)
	if err != nil {
		return nil, err
	}
	var closed []string
	for _, en := range all {
		if en.Finished != nil {
			continue
		}
		ok, err := r.abandon(ctx, en.ReviewStarted)
		if err != nil {
			return closed, err
		}
		if ok {
			closed = append(closed, en.ReviewID)
		}
	}
	return closed, nil
}

func (r *Reviewer) abandon(ctx context.Context, st schema.ReviewStarted) (bool, error) {
	if r.cfg.Leases != nil {
		l, err := r.cfg.Leases.Lease(st.ReviewID)
		var inUse *session.InUseError
		if errors.As(err, &inUse) {
			return false, nil // another process runs it
		}
		if err != nil {
			return false, err
		}
		defer l.Release()
	}
	rs, err := r.cfg.Store.ReadStream(ctx, events.SessionStream(st.ReviewID), events.Forward, 0, 0)
	if err != nil {
		return false, err
	}
	var rec *recorder
	if len(rs) > 0 {
		last := rs[len(rs)-1]
		rec = &recorder{store: r.cfg.Store, session: st.ReviewID, revision: last.Revision, lastID: last.ID}
		open, ended := "", false
		var dangling []schema.ToolCallStarted
		results := map[string]bool{}
		for _, x := range rs {
			switch x.Type {
			case schema.TypeUserMessageAdded:
				open = x.TurnID
			case schema.TypeTurnCompleted, schema.TypeTurnInterrupted:
				open = ""
			case schema.TypeSessionEnded:
				ended = true
			case schema.TypeToolCallStarted, schema.TypeToolResultAdded:
				p, err := schema.Decode(x.Envelope)
				if err != nil {
					continue
				}
				if c, ok := p.(schema.ToolCallStarted); ok {
					dangling = append(dangling, c)
				} else {
					results[p.(schema.ToolResultAdded).CallID] = true
				}
			}
		}
		if open != "" {
			var closing []schema.Payload
			for _, c := range dangling {
				if !results[c.CallID] {
					closing = append(closing, schema.ToolResultAdded{CallID: c.CallID, Name: c.Name, Content: "[interrupted: the process ended]", Error: "interrupted", Interrupted: true})
				}
			}
			closing = append(closing, schema.TurnInterrupted{Reason: "the process ended during the review"})
			if err := rec.Record(ctx, open, closing...); err != nil {
				return false, err
			}
		}
		if ended {
			rec = nil
		}
	}
	fin := schema.ReviewFinished{ReviewID: st.ReviewID, Status: schema.ReviewAbandoned, Error: "the process ended during the review"}
	return true, r.finish(ctx, st.SessionID, st.ReviewID, rec, fin)
}
