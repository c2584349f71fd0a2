package gateway

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Asker returns the tool.Asker of the gateway's sessions: a tool's
// question (a dangerous command's approval, a clarification) goes to the
// chat whose message started the turn — for a subagent, the chat of the
// session that delegated to it — and only that chat's user can answer.
func (r *Router) Asker() tool.Asker { return asker{r} }

type asker struct{ r *Router }

func (a asker) Ask(ctx context.Context, q tool.Question) (string, error) {
	pid, err := a.r.chatFor(ctx, tool.EnvFrom(ctx).SessionID)
	if err != nil {
		return "", err
	}
	if pid == nil {
		return "", tool.ErrNoAsker
	}
	reply := make(chan askAnswer, 1)
	a.r.sys.Root.Send(pid, &ask{q: q, reply: reply})
	select {
	case ans := <-reply:
		return ans.text, ans.err
	case <-ctx.Done():
		a.r.sys.Root.Send(pid, &askDone{reply: reply})
		return "", ctx.Err()
	}
}

// chatFor finds the chat of session id, going up through the sessions it
// was delegated, compressed or forked from.
func (r *Router) chatFor(ctx context.Context, id string) (*actor.PID, error) {
	for range 16 {
		if id == "" || r.pid == nil {
			return nil, nil
		}
		reply := make(chan *actor.PID, 1)
		r.sys.Root.Send(r.pid, &chatOf{session: id, reply: reply})
		select {
		case pid := <-reply:
			if pid != nil {
				return pid, nil
			}
		case <-time.After(5 * time.Second):
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		rs, err := r.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
		if err != nil || len(rs) == 0 {
			return nil, err
		}
		p, err := schema.Decode(rs[0].Envelope)
		if err != nil {
			return nil, err
		}
		id = p.(schema.SessionStarted).ParentSessionID
	}
	return nil, nil
}
