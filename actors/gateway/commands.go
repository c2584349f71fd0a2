package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// command runs an in-chat command; its answer is a recorded reply.
func (c *chat) command(ctx actor.Context, rec schema.GatewayMessageReceived, cmd *command.Command, arg, corr string) error {
	say := func(text string) error {
		return c.reply(rec, "", "", schema.ReplyNotice, Spell(rec.Platform, text), corr)
	}
	switch cmd.ID {
	case command.Sessions:
		return c.sessionsCommand(ctx, arg, say)
	case command.Resume:
		return c.resumeCommand(ctx, arg, say)
	case command.Branch:
		return c.branchCommand(ctx, arg, say)
	case command.Queue:
		return c.queueCommand(ctx, rec, arg, corr, say)
	case command.Steer:
		return c.steerCommand(ctx, rec, arg, corr, say)
	case command.Background:
		return c.backgroundCommand(ctx, rec, arg, corr, say)
	case command.Verbose:
		return c.verboseCommand(arg, say)
	case command.Reasoning:
		return c.reasoningCommand(arg, say)
	case command.Tools, command.Skills, command.Bundles:
		if c.r.cfg.Info == nil {
			return say(cmd.Name + " is not available here.")
		}
		text, err := c.r.cfg.Info(context.Background(), rec.Platform, cmd.ID, arg)
		if err != nil {
			return say(sentence(err.Error()))
		}
		return say(text)
	case command.Unknown:
		return say(sentence(command.Gateway.Unknown(cmd.Name).Error()))
	case command.Help:
		return say("Commands:\n" + command.Gateway.Help())
	case command.New:
		if c.running != nil {
			c.r.Sessions.Stop(c.running.msg.SessionID, "the user started a new conversation")
		}
		c.queue = nil
		if err := c.newSession(ctx, "reset"); err != nil {
			return err
		}
		return say("New conversation started.")
	case command.Stop:
		n := len(c.queue)
		c.queue = nil
		if c.running == nil {
			if n > 0 {
				return say(fmt.Sprintf("Dropped %d queued message(s).", n))
			}
			if len(c.background) > 0 {
				// Each answers that it was stopped.
				for _, w := range c.background {
					c.r.Sessions.Stop(w.msg.SessionID, "user sent /stop")
				}
				return say(fmt.Sprintf("Stopping %d background task(s).", len(c.background)))
			}
			return say("Nothing is running.")
		}
		c.r.Sessions.Stop(c.running.msg.SessionID, "user sent /stop")
		return nil // the turn's end answers "Stopped."
	case command.Model:
		if arg == "" {
			m := c.model
			if m == "" {
				m = c.r.cfg.Model + " (the default)"
			}
			return say("Model: " + m)
		}
		c.model = arg
		return say("This chat now uses " + arg + ".")
	case command.Usage:
		if c.session == "" {
			return say("No conversation yet.")
		}
		prices := c.r.cfg.Prices
		if prices == nil {
			prices = model.DefaultPrices()
		}
		b, err := sessionUsage(context.Background(), c.r.store, c.session, prices)
		if err != nil {
			return err
		}
		text := fmt.Sprintf("This conversation: %d model calls, %d input tokens (%d cached), %d output tokens, %s.",
			b.Calls, b.Usage.PromptTokens, b.Usage.CacheReadTokens, b.Usage.CompletionTokens, b.CostText())
		if u := b.Unknown(); u != "" {
			text += " (" + u + ")"
		}
		return say(text)
	case command.Compress:
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
	case command.Status:
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
		if n := len(c.background); n > 0 {
			fmt.Fprintf(&b, "\nIn the background: %d task(s)", n)
		}
		return say(b.String())
	case command.Undo, command.Retry:
		if c.session == "" {
			return say("No conversation yet.")
		}
		if c.running != nil {
			return say("A task is running: /stop it first.")
		}
		n := 1
		if cmd.ID == command.Undo && arg != "" {
			var err error
			if n, err = strconv.Atoi(arg); err != nil || n < 1 {
				return say("Usage: /undo [N], N a number of turns.")
			}
		}
		u, err := session.Undo(context.Background(), c.r.store, c.session, n)
		if errors.Is(err, session.ErrNothingToUndo) {
			return say("Nothing to take back yet.")
		}
		if err != nil {
			return err
		}
		if err := c.bind(ctx, u.Fork, "undo"); err != nil {
			return err
		}
		if cmd.ID == command.Undo {
			return say(fmt.Sprintf("Took back %d turn(s), to before your message %q. Send it again, or something else.", u.Turns, clip(u.Text, 200)))
		}
		// /retry: the message taken back is answered again, as if sent
		// now (recorded, so that a restart finishes it).
		again := rec
		again.Text, again.SessionID, again.TurnID = u.Text, c.session, uuid.NewString()
		if err := c.record(again); err != nil {
			return err
		}
		c.queue = append(c.queue, &work{msg: again, model: c.model, persona: c.persona, corr: corr})
		c.next(ctx)
		return nil
	case command.Personality:
		if arg == "" {
			names := make([]string, 0, len(c.r.cfg.Personalities))
			for n := range c.r.cfg.Personalities {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return say("No personalities are configured (agent.personalities in config.yaml).")
			}
			return say("Personalities: none, " + strings.Join(names, ", ") + ". /personality NAME takes one on for this chat.")
		}
		if !c.setPersona(arg) {
			return say(fmt.Sprintf("There is no personality %q. /personality lists them.", arg))
		}
		if c.persona == "" {
			return say("No personality from the next message.")
		}
		return say("Personality " + strings.ToLower(arg) + " from the next message.")
	case command.Version:
		return say(first(c.r.cfg.Version, "The version is not known."))
	case command.Title:
		if c.session == "" {
			return say("No conversation yet.")
		}
		if arg == "" {
			t, err := sessionTitle(context.Background(), c.r.store, c.session)
			if err != nil {
				return err
			}
			if t == "" {
				return say("This conversation has no title yet. /title TEXT gives it one.")
			}
			return say("Title: " + t)
		}
		rt, ok := c.r.Sessions.(interface {
			Retitle(ctx context.Context, id, title string) error
		})
		if !ok {
			return say("Titles cannot be set from a chat here (the sessions run on agent nodes): use hermes sessions rename.")
		}
		if err := rt.Retitle(context.Background(), c.session, arg); err != nil {
			return say("Could not set the title: " + sentence(err.Error()))
		}
		return say("Title: " + arg)
	case command.SetHome:
		if err := appendAny(context.Background(), c.r.store, HomesStream, schema.GatewayHomeSet{Platform: rec.Platform, Chat: rec.Chat,
			Thread: rec.Thread, User: rec.User}); err != nil {
			return err
		}
		return say(fmt.Sprintf("This chat is now %s's home channel: scheduled jobs that deliver to %s without naming a chat come here.", rec.Platform, rec.Platform))
	case command.Memory, command.Insights:
		answer := c.r.cfg.Memory
		if cmd.ID == command.Insights {
			answer = func(ctx context.Context, _, arg string) (string, error) {
				if c.r.cfg.Insights == nil {
					return "", errors.New("insights are not available here")
				}
				return c.r.cfg.Insights(ctx, arg)
			}
		}
		if answer == nil {
			return say("Memory review is not available here.")
		}
		text, err := answer(context.Background(), rec.Platform, arg)
		if err != nil {
			return say(sentence(err.Error()))
		}
		return say(text)
	case command.Approve, command.Deny:
		// An answer from the person a question waits for was taken
		// before: this one answers nothing.
		msg := "There is no question waiting for an answer."
		if c.question != nil {
			msg = "Only the person whose message started this task can answer its question."
			_ = appendAny(context.Background(), c.r.store, RefusedStream, schema.GatewayInboundRefused{Platform: rec.Platform, Chat: rec.Chat,
				User: rec.User, MessageID: rec.MessageID, Reason: "approval answered by someone other than the session's user"})
		}
		return say(msg)
	}
	c.r.log.Error().Str("chat", c.key).Str("command", cmd.Name).Msg("the command table offers a command the gateway has no handler for")
	return say(cmd.Name + " " + noHandler)
}

// Spell writes the commands named in text as platform has them typed:
// "!new" on IRC, whose clients keep "/…" for themselves (its adapter reads
// "!new" as /new); "/new" elsewhere.
func Spell(platform, text string) string {
	if platform == "irc" {
		return command.Gateway.Respell(text, "!")
	}
	return text
}

// noHandler ends the answer to a command of the table that the switch
// above has no case for: a bug, which the tests look for.
const noHandler = "is in the command table but has no handler in the gateway."

// sentence makes an error's text a sentence for a chat.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

// sessionUsage sums the model calls of the conversation session id ends:
// its own and, up to where it started from them, those of the sessions a
// compression or a fork (/undo, /retry) continued; priced at prices where
// they recorded no cost (model.Prices.CallCost).
func sessionUsage(ctx context.Context, store events.Store, id string, prices model.Prices) (model.Bill, error) {
	var b model.Bill
	_, err := session.Conversation(ctx, store, id, func(r events.Recorded) error {
		if r.Type != schema.TypeAssistantMessageAdded && r.Type != schema.TypeAuxiliaryCallCompleted {
			return nil
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return err
		}
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			b.Add(prices, e.Model, e.Usage, e.CostUSD, 1)
		case schema.AuxiliaryCallCompleted:
			b.Add(prices, e.Model, e.Usage, e.CostUSD, 1)
		}
		return nil
	})
	return b, err
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
		// The turn has just ended: its events are at the stream's end
		// (after them, at most a few of the session's own, a title, a
		// review). Read back from the end, a page at a time, to the
		// turn's first event, not the whole conversation.
		from := events.End
		const page = 64
		mine := false // an event of the turn was read
		for done := false; !done; {
			rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Backward, from, page)
			if err != nil {
				return u, err
			}
			for _, r := range rs {
				if r.TurnID == turnID {
					mine = true
				} else if r.TurnID != "" && mine {
					done = true // an earlier turn's: this one began after it
					break
				}
				if r.TurnID == turnID && r.Type == schema.TypeUserMessageAdded {
					done = true // the turn's first event
				}
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
			if len(rs) < page || rs[len(rs)-1].Revision == 0 {
				break
			}
			from = rs[len(rs)-1].Revision - 1
		}
	}
	return u, nil
}

// setPersona takes on the personality name (none, default or neutral:
// none); false when there is no such personality.
func (c *chat) setPersona(name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	switch name {
	case "none", "default", "neutral":
		c.persona = ""
		return true
	}
	p, ok := c.r.cfg.Personalities[name]
	if ok {
		c.persona = p
	}
	return ok
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clip keeps the first n runes of s.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// sessionTitle is the last title session id was given ("" for none).
func sessionTitle(ctx context.Context, store events.Store, id string) (string, error) {
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return "", err
	}
	title := ""
	for _, r := range rs {
		if r.Type != schema.TypeSessionTitled {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return "", err
		}
		title = p.(schema.SessionTitled).Title
	}
	return title, nil
}
