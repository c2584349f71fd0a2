package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/schema"
)

// MaxBackground bounds the /background turns a chat has running at once;
// one more is refused with a message saying so.
const MaxBackground = 4

// queueCommand is /queue TEXT: TEXT is answered after the turn running
// now (and those queued before it) without interrupting it, whatever
// gateway.busy says; with nothing running, at once. rec is the command as
// recorded.
func (c *chat) queueCommand(ctx actor.Context, rec schema.GatewayMessageReceived, arg, corr string, say func(string) error) error {
	if arg == "" {
		return say("Usage: /queue TEXT.")
	}
	if len(c.queue) >= MaxQueued {
		return say(fmt.Sprintf("%d messages of this chat are waiting for the agent already; this one was not taken. Send it again once it has answered.", len(c.queue)))
	}
	if c.session == "" {
		if err := c.newSession(ctx, "new"); err != nil {
			return err
		}
	}
	// Recorded again with its session and turn, as a message to answer
	// is: a restart runs it (recover reads the text /queue was given).
	again := rec
	again.SessionID, again.TurnID = c.session, uuid.NewString()
	if err := c.record(again); err != nil {
		return err
	}
	w := &work{msg: again, prompt: arg, model: c.model, persona: c.persona, corr: corr}
	c.queue = append(c.queue, w)
	if c.running == nil {
		c.next(ctx)
		return nil
	}
	// Not a reply to the message: its answer is still to come.
	return c.notice(fmt.Sprintf("Queued (%d waiting): it is answered when the current turn ends.", len(c.queue)), corr)
}

// Steerer is the part of Sessions that hands guidance to a running turn
// (session.Manager; the cluster's sessions do not offer it).
type Steerer interface {
	Steer(id, text string) error
}

// steerCommand is /steer TEXT: guidance for the turn in flight, read by
// the model before its next step, without interrupting it; with nothing
// running, TEXT is an ordinary message.
func (c *chat) steerCommand(ctx actor.Context, rec schema.GatewayMessageReceived, arg, corr string, say func(string) error) error {
	if arg == "" {
		return say("Usage: /steer TEXT.")
	}
	if c.running == nil {
		return c.queueCommand(ctx, rec, arg, corr, say)
	}
	st, ok := c.r.Sessions.(Steerer)
	if !ok {
		return say("/steer is not available here: /queue TEXT sends it after the current task, /stop stops it.")
	}
	err := st.Steer(c.running.msg.SessionID, arg)
	switch {
	case err == nil:
		return c.notice("Guidance sent: the agent reads it before its next step.", corr)
	case errors.Is(err, session.ErrNotRunning):
		// The turn ended meanwhile: an ordinary message.
		return c.queueCommand(ctx, rec, arg, corr, say)
	default:
		return say("Could not steer: " + sentence(err.Error()))
	}
}

// backgroundCommand is /background TEXT: TEXT is answered in a session of
// its own, beside the chat's turns; the answer comes to the chat when it
// is ready.
func (c *chat) backgroundCommand(ctx actor.Context, rec schema.GatewayMessageReceived, arg, corr string, say func(string) error) error {
	if arg == "" {
		return say("Usage: /background TEXT.")
	}
	if len(c.background) >= MaxBackground {
		return say(fmt.Sprintf("%d background tasks of this chat are running already: wait for one to end, or /stop them.", len(c.background)))
	}
	id := uuid.NewString() // created by its turn (see launch)
	if c.r.cfg.CreateSession == nil {
		var err error
		if id, err = c.r.cfg.NewSession(context.Background(), rec.Platform); err != nil {
			return fmt.Errorf("new background session for chat %s: %w", c.key, err)
		}
	}
	again := rec
	again.SessionID, again.TurnID = id, uuid.NewString()
	if err := c.record(again); err != nil {
		return err
	}
	c.startBackground(ctx, &work{msg: again, prompt: arg, model: c.model, persona: c.persona, corr: corr, background: true})
	return c.notice(fmt.Sprintf("Started in the background as session %s: its answer comes here when it is ready.", id), corr)
}

// startBackground runs a /background turn beside the chat's own: no
// typing, no previews, and no question can reach the chat from it (its
// session is bound to no chat, so a tool asking is told no one can answer).
func (c *chat) startBackground(ctx actor.Context, w *work) {
	if c.background == nil {
		c.background = map[string]*work{}
	}
	tctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	c.background[w.msg.TurnID] = w
	c.launch(ctx, w, tctx, nil, nil, false)
}

// finishBackground records and sends the answer of a /background turn.
func (c *chat) finishBackground(m *turnFinished) {
	delete(c.background, m.w.msg.TurnID)
	res, sid := m.res, m.w.msg.SessionID
	kind := schema.ReplyAnswer
	var text string
	switch {
	case errors.Is(res.Err, agent.ErrInterrupted):
		kind, text = schema.ReplyNotice, fmt.Sprintf("The background task in session %s was stopped.", sid)
	case res.Err != nil:
		kind, text = schema.ReplyError, fmt.Sprintf("The background task in session %s failed: %s", sid, res.Err.Error())
	default:
		answer := res.Answer
		if answer == "" {
			answer = "(no answer)"
		}
		text = fmt.Sprintf("Background task done (session %s):\n\n%s", sid, answer)
	}
	if err := c.reply(m.w.msg, first(res.SessionID, sid), res.TurnID, kind, text, m.w.corr); err != nil {
		c.r.log.Error().Err(err).Str("chat", c.key).Msg("record a background task's reply")
	}
}

// notice records and sends text to the chat as a reply to no message: a
// message whose answer is still to come stays unanswered in the record,
// so that a restart answers it.
func (c *chat) notice(text, corr string) error {
	return c.reply(schema.GatewayMessageReceived{}, "", "", schema.ReplyNotice, text, corr)
}
