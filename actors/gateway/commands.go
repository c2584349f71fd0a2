package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

const helpText = `Commands:
/new — start a new conversation (also /reset)
/stop — stop what I am doing
/model NAME — use another model in this chat (/model alone shows it)
/usage — tokens and cost of this conversation
/compress — summarise the conversation so far to free context
/status — the session, model and what is running
/approve [session|always], /deny — answer an approval question
/help — this list`

// command runs an in-chat command; its answer is a recorded reply.
func (c *chat) command(ctx actor.Context, rec schema.GatewayMessageReceived, cmd, arg, corr string) error {
	say := func(text string) error { return c.reply(rec, "", "", schema.ReplyNotice, text, corr) }
	switch cmd {
	case "/help", "/start":
		return say(helpText)
	case "/new", "/reset":
		if c.running != nil {
			c.r.Sessions.Stop(c.running.msg.SessionID, "the user started a new conversation")
		}
		c.queue = nil
		if err := c.newSession(ctx, "reset"); err != nil {
			return err
		}
		return say("New conversation started.")
	case "/stop":
		n := len(c.queue)
		c.queue = nil
		if c.running == nil {
			if n > 0 {
				return say(fmt.Sprintf("Dropped %d queued message(s).", n))
			}
			return say("Nothing is running.")
		}
		c.r.Sessions.Stop(c.running.msg.SessionID, "user sent /stop")
		return nil // the turn's end answers "Stopped."
	case "/model":
		if arg == "" {
			m := c.model
			if m == "" {
				m = c.r.cfg.Model + " (the default)"
			}
			return say("Model: " + m)
		}
		c.model = arg
		return say("This chat now uses " + arg + ".")
	case "/usage":
		if c.session == "" {
			return say("No conversation yet.")
		}
		u, cost, calls, err := sessionUsage(context.Background(), c.r.store, c.session)
		if err != nil {
			return err
		}
		return say(fmt.Sprintf("This conversation: %d model calls, %d input tokens (%d cached), %d output tokens, $%.4f.",
			calls, u.PromptTokens, u.CacheReadTokens, u.CompletionTokens, cost))
	case "/compress":
		if c.session == "" {
			return say("No conversation yet.")
		}
		if c.running != nil {
			return say("A task is running: /stop it before compressing.")
		}
		id, err := c.r.Sessions.Compress(context.Background(), c.session, c.model)
		if err != nil {
			return say("Could not compress: " + err.Error())
		}
		if id != c.session {
			if err := c.bind(ctx, id, "compression"); err != nil {
				return err
			}
		}
		return say("Compressed: the conversation continues in session " + id + ".")
	case "/status":
		var b strings.Builder
		fmt.Fprintf(&b, "Session: %s\n", orNone(c.session))
		m := c.model
		if m == "" {
			m = c.r.cfg.Model
		}
		fmt.Fprintf(&b, "Model: %s\n", m)
		if c.running != nil {
			fmt.Fprintf(&b, "Running: a task since your message %s\n", c.running.msg.MessageID)
		} else {
			b.WriteString("Running: nothing\n")
		}
		fmt.Fprintf(&b, "Queued: %d", len(c.queue))
		return say(b.String())
	}
	return say("Unknown command " + cmd + ". /help lists them.")
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

// sessionUsage sums the model calls of a session's stream.
func sessionUsage(ctx context.Context, store events.Store, id string) (schema.Usage, float64, int, error) {
	var u schema.Usage
	var cost float64
	calls := 0
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return u, 0, 0, err
	}
	for _, r := range rs {
		if r.Type != schema.TypeAssistantMessageAdded && r.Type != schema.TypeAuxiliaryCallCompleted {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return u, 0, 0, err
		}
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			u, cost, calls = u.Add(e.Usage), cost+e.CostUSD, calls+1
		case schema.AuxiliaryCallCompleted:
			u, cost, calls = u.Add(e.Usage), cost+e.CostUSD, calls+1
		}
	}
	return u, cost, calls, nil
}

// turnUsage sums the model calls of turn turnID in the sessions it ran in
// (two when a compression moved it to a child session).
func turnUsage(ctx context.Context, store events.Store, turnID string, ids ...string) (schema.Usage, error) {
	var u schema.Usage
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			return u, err
		}
		for _, r := range rs {
			if r.TurnID != turnID || (r.Type != schema.TypeAssistantMessageAdded && r.Type != schema.TypeAuxiliaryCallCompleted) {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return u, err
			}
			switch e := p.(type) {
			case schema.AssistantMessageAdded:
				u = u.Add(e.Usage)
			case schema.AuxiliaryCallCompleted:
				u = u.Add(e.Usage)
			}
		}
	}
	return u, nil
}
