package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// chat is the actor of one chat: the only writer of its stream, it keeps
// the chat's session, the platform message ids it has seen, the outbox of
// replies not yet delivered, the turn in flight and the messages queued
// behind it, and a question (approval, clarification) waiting for the
// chat's user.
type chat struct {
	r      *Router
	key    string
	stream string
	first  *schema.Inbound

	rev    uint64
	exists bool
	info   schema.GatewayChatOpened

	session string
	model   string
	persona string // the personality /personality took on ("": none)
	// progress is the tool-progress mode /verbose chose for this chat
	// ("": the platform's display.tool_progress).
	progress string
	// reasoning shows the model's thinking above its answers
	// (/reasoning show).
	reasoning  bool
	lastActive time.Time
	seen       map[string]bool
	answered   map[string]bool
	pending    map[string]schema.GatewayReplyRequested
	// previews are the platform messages streamed answers are being
	// written into, by the message answered (until its reply is
	// delivered).
	previews map[string]schema.GatewayReplyPreviewed

	running *work
	queue   []*work
	// background are the turns /background runs beside the chat's own,
	// by turn id.
	background map[string]*work
	question   *question
	// recv counts the messages the router handed this actor (chatIdle).
	recv int

	// staged holds the opening events of a new chat (opened, session
	// bound), appended together with its first message: one durable write
	// instead of three on a first message's path.
	staged []schema.Envelope
	// indexed reports the index append of a new chat, in flight.
	indexed chan error
	// unsure: an append failed, so the stream may hold it or not (the
	// store answered an error for one it may have written); the next
	// record reads the stream's revision first.
	unsure bool
	// With Config.CreateSession, a session is written by its first turn
	// (ensureSession). fresh is the session this actor named last, which
	// nothing can have written before its first turn: that turn creates
	// it without looking first. made is the session a turn of this actor
	// created or found written: its later turns need not look.
	fresh, made string
}

// work is one message to answer with a turn.
type work struct {
	msg     schema.GatewayMessageReceived
	stream  bool
	model   string
	persona string
	corr    string
	recover bool
	cancel  context.CancelFunc

	// verified marks a front door's message (the API server reports the
	// turn's token usage with its reply).
	verified bool
	// skill, when set, is the turn of a skill command (/name): its text
	// goes to the model instead of the message's.
	skill *SkillTurn
	// prompt, when set, goes to the model instead of the message's text:
	// what /queue or /background was given.
	prompt string
	// background marks a turn of /background: it runs in a session of its
	// own beside the chat's turns, and its answer binds nothing.
	background bool
}

type question struct {
	q     tool.Question
	owner string
	reply chan askAnswer
}

// idle says whether the chat holds nothing that lives only in its actor:
// no turn running or queued, no question waiting, every reply it asked for
// delivered or failed. Its actor may then stop; the next message starts
// it again from its stream.
func (c *chat) idle() bool {
	return c.running == nil && len(c.queue) == 0 && len(c.background) == 0 && c.question == nil && len(c.pending) == 0 && len(c.staged) == 0
}

// chatIdle is a chat actor telling the router it has been idle for
// Config.ChatIdle, having received recv messages from it.
type chatIdle struct {
	key  string
	pid  *actor.PID
	recv int
}

func (c *chat) Receive(ctx actor.Context) {
	defer c.armIdle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if err := c.recover(ctx); err != nil {
			panic(fmt.Errorf("chat %s: recover: %w", c.key, err))
		}
	case *inbound:
		c.recv++
		m.done <- c.handle(ctx, m)
	case *turnFinished:
		c.finish(ctx, m)
	case *ask:
		c.onAsk(m)
	case *askDone:
		if c.question != nil && c.question.reply == m.reply {
			c.question = nil
		}
	case *actor.Stopping:
		if c.running != nil && c.running.cancel != nil {
			c.running.cancel()
		}
		for _, w := range c.background {
			if w.cancel != nil {
				w.cancel()
			}
		}
	case *actor.ReceiveTimeout:
		if c.idle() {
			// The router stops this actor if it sent nothing since.
			ctx.Send(ctx.Parent(), &chatIdle{key: c.key, pid: ctx.Self(), recv: c.recv})
		}
	case *actor.Restarting, *actor.Stopped, *actor.Terminated:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		c.r.log.Warn().Str("chat", c.key).Str("message_type", fmt.Sprintf("%T", m)).Msg("chat actor: message not handled")
	}
}

// armIdle starts the wait after which an idle chat offers to stop
// (Config.ChatIdle), or cancels it while the chat holds work.
func (c *chat) armIdle(ctx actor.Context) {
	if c.r.cfg.ChatIdle <= 0 {
		return
	}
	if _, timeout := ctx.Message().(*actor.ReceiveTimeout); timeout {
		ctx.CancelReceiveTimeout() // offered once; the next message arms it again
		return
	}
	if c.idle() {
		ctx.SetReceiveTimeout(c.r.cfg.ChatIdle)
	} else {
		ctx.CancelReceiveTimeout()
	}
}

// recover folds the chat's stream, sends again the replies recorded but not
// delivered, and queues the messages whose turns never answered.
func (c *chat) recover(ctx actor.Context) error {
	bg := context.Background()
	rs, err := c.r.store.ReadStream(bg, c.stream, events.Forward, 0, 0)
	if err != nil {
		return err
	}
	var received []schema.GatewayMessageReceived
	var order []string
	for _, rec := range rs {
		pl, err := schema.Decode(rec.Envelope)
		if err != nil {
			return &events.CorruptEventError{Stream: rec.Stream, Revision: rec.Revision, Position: rec.Position, Err: err}
		}
		c.rev, c.exists = rec.Revision, true
		c.lastActive = rec.Time
		switch e := pl.(type) {
		case schema.GatewayChatOpened:
			c.info = e
		case schema.GatewayMessageReceived:
			c.seen[e.MessageID] = true
			if e.SessionID != "" && e.TurnID != "" {
				received = append(received, e)
			}
			if cmd, arg, ok := command.Gateway.Parse(e.Text); ok && e.TurnID == "" {
				// What the chat's commands set for it, as they set it.
				switch {
				case cmd.ID == command.Model && arg != "":
					c.model = arg
				case cmd.ID == command.Personality && arg != "":
					c.setPersona(arg)
				case cmd.ID == command.Verbose:
					_, _ = c.setProgress(arg)
				case cmd.ID == command.Reasoning:
					_ = c.setReasoning(arg)
				}
			}
		case schema.GatewaySessionBound:
			c.session = e.SessionID
		case schema.GatewayReplyRequested:
			c.pending[e.ReplyID] = e
			order = append(order, e.ReplyID)
			if e.InReplyTo != "" {
				c.answered[e.InReplyTo] = true
			}
		case schema.GatewayReplyPreviewed:
			c.notePreview(e)
		case schema.GatewayMessageDelivered:
			c.settled(e.ReplyID)
		case schema.GatewayDeliveryFailed:
			c.settled(e.ReplyID)
		}
	}
	if c.session != "" {
		ctx.Send(ctx.Parent(), &bound{session: c.session, key: c.key})
	}
	for _, id := range order {
		if rep, ok := c.pending[id]; ok && rep.Kind != schema.ReplyApproval {
			c.r.log.Info().Str("chat", c.key).Str("reply", id).Msg("sending a reply recorded before the restart")
			_ = c.r.publish(c.outbound(schema.OutboundReply, rep), "")
		} else if ok {
			// The question died with the process that asked it.
			delete(c.pending, id)
		}
	}
	for _, e := range received {
		if !c.answered[e.MessageID] {
			w := &work{msg: e, recover: true}
			if cmd, arg, ok := command.Gateway.Parse(e.Text); ok && (cmd.ID == command.Queue || cmd.ID == command.Background) {
				// What /queue or /background was given runs, as it would
				// have; a background turn runs beside the chat's again.
				w.prompt, w.background = arg, cmd.ID == command.Background
				if w.background {
					c.startBackground(ctx, w)
					continue
				}
			}
			// A skill command's turn loads the skill again.
			if name, arg, ok := skillCommand(e.Platform, e.Text); ok && c.r.cfg.Skill != nil && e.TurnID != TurnIDFor(e.Platform, e.MessageID) {
				if st, err := c.r.cfg.Skill(bg, e.Platform, e.SessionID, name, arg); err == nil {
					w.skill = &st
				}
			}
			c.queue = append(c.queue, w)
		}
	}
	c.next(ctx)
	return nil
}

func (c *chat) outbound(kind string, rep schema.GatewayReplyRequested) schema.Outbound {
	out := schema.Outbound{Kind: kind, Key: c.key, Platform: c.info.Platform, Chat: c.info.Chat, Thread: c.info.Thread,
		ReplyID: rep.ReplyID, InReplyTo: rep.InReplyTo, SessionID: rep.SessionID, Text: rep.Text, Segment: rep.Segment, Replace: rep.Replace}
	if p, ok := c.previews[rep.InReplyTo]; ok && rep.Replace && p.Segment == rep.Segment {
		out.Edit = p.PlatformMessageIDs
	}
	return out
}

// awaits reports whether the answer to message id is still to be
// delivered: its turn runs, or its reply is in the outbox.
func (c *chat) awaits(id string) bool {
	if id == "" {
		return false
	}
	if c.running != nil && c.running.msg.MessageID == id {
		return true
	}
	for _, rep := range c.pending {
		if rep.InReplyTo == id && rep.Kind != schema.ReplyApproval {
			return true
		}
	}
	return false
}

// notePreview keeps the latest preview message of a turn's answer.
func (c *chat) notePreview(e schema.GatewayReplyPreviewed) {
	if p, ok := c.previews[e.InReplyTo]; ok && p.Segment > e.Segment {
		return
	}
	c.previews[e.InReplyTo] = e
}

// settled forgets a reply delivered or failed, and the preview it
// replaced.
func (c *chat) settled(replyID string) {
	if rep, ok := c.pending[replyID]; ok && rep.Kind != schema.ReplyApproval && rep.InReplyTo != "" {
		delete(c.previews, rep.InReplyTo)
	}
	delete(c.pending, replyID)
}

// record appends to the chat's stream, after what was staged; the chat
// actor is its only writer.
func (c *chat) record(ps ...schema.Payload) error {
	envs := make([]schema.Envelope, 0, len(c.staged)+len(ps))
	envs = append(envs, c.staged...)
	for _, p := range ps {
		env, err := schema.NewEnvelope(schema.Meta{SessionID: c.session}, p)
		if err != nil {
			return err
		}
		envs = append(envs, env)
	}
	if c.unsure {
		// Without this, an append the store wrote but answered with an
		// error would leave the chat a revision behind its stream, and
		// every message after it failing.
		rs, err := c.r.store.ReadStream(context.Background(), c.stream, events.Backward, math.MaxUint64, 1)
		if err != nil {
			return fmt.Errorf("record in chat %s: %w", c.key, err)
		}
		if len(rs) > 0 {
			c.rev, c.exists = rs[0].Revision, true
		}
		c.unsure = false
	}
	exp := events.NoStream
	if c.exists {
		exp = events.Exact(c.rev)
	}
	res, err := c.r.store.Append(context.Background(), c.stream, exp, envs...)
	if c.indexed != nil {
		// The chat's entry in the index was written beside this append
		// (one group commit); the message counts as taken only with both.
		err = errors.Join(err, <-c.indexed)
		c.indexed = nil
	}
	if err != nil {
		c.unsure = true
		if len(c.staged) > 0 && !c.exists {
			// Nothing of the chat is written: its next message opens it
			// (and binds a session) again.
			c.staged, c.session = nil, ""
		}
		return fmt.Errorf("record in chat %s: %w", c.key, err)
	}
	c.staged = nil
	c.rev, c.exists = res.NextRevision, true
	c.lastActive = c.r.cfg.Now()
	return nil
}

// stage keeps p for the chat's next record, as it would be recorded now.
func (c *chat) stage(p schema.Payload) error {
	env, err := schema.NewEnvelope(schema.Meta{SessionID: c.session}, p)
	if err != nil {
		return err
	}
	c.staged = append(c.staged, env)
	return nil
}

func (c *chat) handle(ctx actor.Context, m *inbound) error {
	in := m.in
	switch in.Kind {
	case schema.InboundDelivered:
		if _, ok := c.pending[in.ReplyID]; !ok {
			return nil // already recorded (a redelivered ack)
		}
		if err := c.record(schema.GatewayMessageDelivered{ReplyID: in.ReplyID, PlatformMessageIDs: in.PlatformMessageIDs}); err != nil {
			return err
		}
		c.settled(in.ReplyID)
		return nil
	case schema.InboundFailed:
		if _, ok := c.pending[in.ReplyID]; !ok {
			return nil
		}
		if err := c.record(schema.GatewayDeliveryFailed{ReplyID: in.ReplyID, Error: in.Error}); err != nil {
			return err
		}
		c.settled(in.ReplyID)
		c.r.stats.err(c.info.Platform, errors.New(in.Error))
		return nil
	case schema.InboundCallback:
		return c.answer(in.User, in.Data, m.corr)
	case schema.InboundPreviewed:
		if !c.awaits(in.MessageID) {
			return nil // a preview of an answer delivered already
		}
		e := schema.GatewayReplyPreviewed{InReplyTo: in.MessageID, Segment: in.Segment, PlatformMessageIDs: in.PlatformMessageIDs}
		if err := c.record(e); err != nil {
			return err
		}
		c.notePreview(e)
		return nil
	}

	if in.MessageID != "" && c.seen[in.MessageID] {
		c.r.log.Debug().Str("chat", c.key).Str("message_id", in.MessageID).Msg("platform message seen before: no second turn")
		return nil
	}
	if d := c.r.cfg.Dispatch; d != nil && !in.Verified {
		switch dec := d(context.Background(), in); {
		case dec.Skip:
			c.r.log.Info().Str("chat", c.key).Str("message_id", in.MessageID).Str("reason", dec.Reason).Msg("pre_gateway_dispatch: message dropped by a hook")
			if in.MessageID != "" {
				c.seen[in.MessageID] = true
			}
			return nil
		case dec.Rewrite:
			in.Text = dec.Text
		}
	}
	if !c.exists && len(c.staged) == 0 {
		if err := c.open(in); err != nil {
			return err
		}
	}
	text := strings.TrimSpace(in.Text)
	limit := MaxTextBytes
	if in.Verified {
		limit = MaxVerifiedTextBytes
	}
	if len(in.Text) > limit {
		rec := schema.GatewayMessageReceived{Platform: in.Platform, Chat: in.Chat, Thread: in.Thread, User: in.User, UserName: in.UserName,
			MessageID: in.MessageID, Text: in.Text[:1024] + "…"}
		if err := c.record(rec); err != nil {
			return err
		}
		c.seen[in.MessageID] = true
		return c.reply(rec, "", "", schema.ReplyNotice, fmt.Sprintf("That message is %d KiB; the limit is %d KiB. Send it as a file, or in parts.", len(in.Text)>>10, limit>>10), m.corr)
	}

	// Verified front doors (the API server, webhooks) carry text written by
	// programs: it is never a chat command, and a question waiting in the
	// chat is answered only by a callback (the API's approvals endpoint).
	people := !in.Verified

	// A question waits for this chat's user: this message may be the answer.
	if people && c.question != nil && c.question.owner == in.User {
		if c.question.q.Kind != tool.QuestionApproval || isAnswer(text) {
			if err := c.record(c.received(in, "", "")); err != nil {
				return err
			}
			c.seen[in.MessageID] = true
			return c.answer(in.User, text, m.corr)
		}
	}

	// A skill command (/name, !name on IRC) starts a turn that loads it.
	var skill *SkillTurn
	if name, arg, ok := skillCommand(in.Platform, text); people && ok && c.r.cfg.Skill != nil {
		st, err := c.r.cfg.Skill(context.Background(), in.Platform, c.session, name, arg)
		switch {
		case err == nil:
			skill = &st
		case !errors.Is(err, ErrNotSkill):
			rec := c.received(in, "", "")
			if err := c.record(rec); err != nil {
				return err
			}
			c.seen[in.MessageID] = true
			return c.reply(rec, "", "", schema.ReplyNotice, sentence(err.Error()), m.corr)
		}
	}

	if cmd, arg, ok := command.Gateway.Parse(text); people && ok && skill == nil {
		rec := c.received(in, "", "")
		if err := c.record(rec); err != nil {
			return err
		}
		c.seen[in.MessageID] = true
		return c.command(ctx, rec, cmd, arg, m.corr)
	}

	// A chat idle past the reset policy starts over.
	if c.session != "" && c.r.cfg.IdleReset > 0 && c.running == nil && c.r.cfg.Now().Sub(c.lastActive) > c.r.cfg.IdleReset {
		if err := c.newSession(ctx, "idle"); err != nil {
			return err
		}
	}
	if len(c.queue) >= MaxQueued {
		// Bounded: a chat sending faster than its turns end is told so,
		// rather than queueing without end.
		rec := c.received(in, "", "")
		if err := c.record(rec); err != nil {
			return err
		}
		c.seen[in.MessageID] = true
		return c.reply(rec, "", "", schema.ReplyError, fmt.Sprintf("%d messages of this chat are waiting for the agent already; this one was not taken. Send it again once it has answered.", len(c.queue)), m.corr)
	}
	if c.session == "" {
		if err := c.bindFirst(ctx, in); err != nil {
			return err
		}
	}
	turnID := uuid.NewString()
	if in.Verified && in.MessageID != "" {
		turnID = TurnIDFor(in.Platform, in.MessageID)
	}
	rec := c.received(in, c.session, turnID)
	if err := c.record(rec); err != nil {
		return err
	}
	c.seen[in.MessageID] = true
	model := c.model
	if in.Verified && in.Model != "" {
		model = in.Model
	}
	w := &work{msg: rec, stream: in.Stream, model: model, persona: c.persona, corr: m.corr, verified: in.Verified, skill: skill}
	c.queue = append(c.queue, w)
	if c.running != nil && c.r.cfg.Busy == "interrupt" {
		c.r.Sessions.Stop(c.running.msg.SessionID, "a new message arrived")
	}
	c.next(ctx)
	return nil
}

func (c *chat) received(in schema.Inbound, sessionID, turnID string) schema.GatewayMessageReceived {
	return schema.GatewayMessageReceived{Platform: in.Platform, Chat: in.Chat, Thread: in.Thread, User: in.User, UserName: in.UserName,
		MessageID: in.MessageID, Text: in.Text, Attachments: in.Attachments, SessionID: sessionID, TurnID: turnID}
}

// open lists the chat in the index and stages the start of its stream,
// written with the first message. Listed first: a chat stream is always
// found again on start (an entry whose stream was never written is
// harmless).
func (c *chat) open(in schema.Inbound) error {
	c.info = schema.GatewayChatOpened{Key: c.key, Stream: c.stream, Platform: in.Platform, Chat: in.Chat, Thread: in.Thread}
	if in.ChatType == "group" && !c.r.cfg.SharedGroupSessions {
		c.info.User = in.User
	}
	// Written while the first message is: both appends share one fsync.
	// An index entry without its chat stream (a failed first append) is
	// harmless: the chat recovers as empty.
	c.indexed = make(chan error, 1)
	go func(info schema.GatewayChatOpened) {
		c.indexed <- appendAny(context.Background(), c.r.store, ChatIndexStream, info)
	}(c.info)
	return c.stage(c.info)
}

// bindFirst gives a new chat its session: the one a verified front door
// names (the API server's X-Hermes-Session-Id), or a new one.
func (c *chat) bindFirst(ctx actor.Context, in schema.Inbound) error {
	if in.Verified && in.SessionID != "" {
		rs, err := c.r.store.ReadStream(context.Background(), events.SessionStream(in.SessionID), events.Forward, 0, 1)
		if err != nil {
			return err
		}
		if len(rs) > 0 {
			return c.bind(ctx, in.SessionID, "resume")
		}
	}
	return c.newSession(ctx, "new")
}

func (c *chat) newSession(ctx actor.Context, reason string) error {
	if c.r.cfg.CreateSession != nil {
		// Created by its first turn (see launch).
		c.fresh = uuid.NewString()
		return c.bind(ctx, c.fresh, reason)
	}
	id, err := c.r.cfg.NewSession(context.Background(), c.info.Platform)
	if err != nil {
		return fmt.Errorf("new session for chat %s: %w", c.key, err)
	}
	return c.bind(ctx, id, reason)
}

func (c *chat) bind(ctx actor.Context, id, reason string) error {
	c.session = id
	b := schema.GatewaySessionBound{SessionID: id, Reason: reason}
	if len(c.staged) > 0 {
		// A new chat: bound in the same write as its first message.
		if err := c.stage(b); err != nil {
			return err
		}
	} else if err := c.record(b); err != nil {
		return err
	}
	ctx.Send(ctx.Parent(), &bound{session: id, key: c.key})
	return nil
}

// next starts the first queued turn when none runs.
func (c *chat) next(ctx actor.Context) {
	if c.running != nil || len(c.queue) == 0 {
		return
	}
	w := c.queue[0]
	c.queue = c.queue[1:]
	c.running = w
	c.r.stats.active.Add(1)
	tctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	out := schema.Outbound{Key: c.key, Platform: c.info.Platform, Chat: c.info.Chat, Thread: c.info.Thread, InReplyTo: w.msg.MessageID, SessionID: w.msg.SessionID}
	go c.typing(tctx, out)
	var observers []agent.Observer
	if w.stream {
		// The deltas are the session's own text (not its subagents'),
		// and what one model call says before calling tools is set apart
		// from the next call's text by a blank line: the streamed answer
		// reads as the whole answer does.
		said := false
		observers = append(observers, func(o agent.Observation) {
			if o.Depth != 0 {
				return
			}
			switch {
			case o.Kind == agent.ObserveStep && said:
				said = false
				d := out
				d.Kind, d.Text = schema.OutboundDelta, "\n\n"
				_ = c.r.publish(d, w.corr)
			case o.Kind == agent.ObserveDelta && o.Text != "":
				said = true
				d := out
				d.Kind, d.Text = schema.OutboundDelta, o.Text
				_ = c.r.publish(d, w.corr)
			}
		})
	}
	var v *view
	if disp := c.display(w); disp.Streaming || disp.ToolProgress != "" {
		corr := w.corr
		v = newView(disp, out, c.r.cfg.Now, func(o schema.Outbound) { _ = c.r.publish(o, corr) })
		observers = append(observers, v.observe)
	}
	var observe agent.Observer
	switch len(observers) {
	case 0:
	case 1:
		observe = observers[0]
	default:
		observe = func(o agent.Observation) {
			for _, f := range observers {
				f(o)
			}
		}
	}
	c.launch(ctx, w, tctx, observe, v, c.reasoning && !w.verified)
}

// launch runs w's turn in a goroutine of its own, which tells the chat
// actor when it ends (turnFinished): with the preview segment its answer
// replaces (v), and with the model's thinking when thinking is shown.
func (c *chat) launch(ctx actor.Context, w *work, tctx context.Context, observe agent.Observer, v *view, thinking bool) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	store, sessions, create, platform, images := c.r.store, c.r.Sessions, c.r.cfg.CreateSession, c.info.Platform, c.r.cfg.Images
	cancel := w.cancel
	ensure := create != nil && w.msg.SessionID != c.made
	fresh := w.msg.SessionID == c.fresh
	go func() {
		defer cancel()
		created := false
		if ensure {
			var err error
			if created, err = ensureSession(tctx, store, create, platform, w.msg.SessionID, fresh); err != nil {
				root.Send(self, &turnFinished{w: w, res: session.TurnResult{SessionID: w.msg.SessionID, Err: err}})
				return
			}
		}
		sctx, span := startTurnSpan(tctx, platform, w)
		res := runTurn(sctx, store, sessions, w, observe, images, created)
		endTurnSpan(sctx, span, platform, res)
		fin := &turnFinished{w: w, res: res, made: ensure}
		if v != nil {
			fin.segment, fin.replace = v.answered()
		}
		if thinking && res.Err == nil {
			fin.thinking = turnThinking(context.Background(), store, res.SessionID, res.TurnID)
		}
		root.Send(self, fin)
	}()
}

// display is how w's turn shows in the chat while it runs: nothing for a
// front door's message; for a turn a restart cut short, no previews (its
// answer replaces the one recorded, see finish).
func (c *chat) display(w *work) Display {
	if w.verified || (c.r.cfg.Display == nil && c.progress == "") {
		return Display{}
	}
	if c.r.cfg.Display == nil {
		return Display{ToolProgress: c.progress}
	}
	d := c.r.cfg.Display(c.info.Platform)
	if c.progress != "" {
		d.ToolProgress = c.progress // the chat's /verbose
	}
	if d.ToolProgress == ProgressOff {
		d.ToolProgress = ""
	}
	if w.recover {
		d.Streaming = false
	}
	return d
}

// ensureSession creates session id if nothing was written to it yet: the
// router names a chat's new session when it binds it, and its first turn
// creates it (also after a crash between the two). A fresh session (one
// just named, which nothing can have written) is created without reading
// its stream first. created says whether this call created it.
func ensureSession(ctx context.Context, store events.Store, create func(context.Context, string, string) error, platform, id string, fresh bool) (created bool, err error) {
	if !fresh {
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
		if err != nil || len(rs) > 0 {
			return false, err
		}
	}
	err = create(ctx, platform, id)
	var wrong *events.WrongExpectedVersionError
	if errors.As(err, &wrong) {
		return false, nil // created meanwhile
	}
	return err == nil, err
}

// runTurn runs w's turn. A message recovered after a crash is looked up in
// its session first: a turn that completed is answered from the record, a
// turn cut short is continued, a turn that never started is run. created:
// the session was created for this turn just now (its turn is New).
func runTurn(ctx context.Context, store events.Store, sessions Sessions, w *work, observe agent.Observer,
	images func(context.Context, []schema.Attachment) ([]schema.ImageRef, []string, error), created bool) session.TurnResult {
	t := &session.Turn{Text: w.msg.Text, ID: w.msg.TurnID, Model: w.model, Observe: observe, Persona: w.persona,
		Trace: trace.SpanContextFromContext(ctx), New: created && !w.recover}
	if w.skill != nil {
		t.Text, t.Skills = w.skill.Text, w.skill.Skills
	}
	if w.prompt != "" {
		t.Text = w.prompt
	}
	sid := w.msg.SessionID
	if images != nil && len(w.msg.Attachments) > 0 {
		// Stored before the turn starts: its user message names them.
		refs, notes, err := images(ctx, w.msg.Attachments)
		if err != nil {
			return session.TurnResult{SessionID: sid, Err: fmt.Errorf("keep the message's images: %w", err)}
		}
		t.Images = refs
		if len(notes) > 0 {
			t.Text = strings.TrimSpace(t.Text + "\n\n" + strings.Join(notes, "\n"))
		}
	}
	for lookup := w.recover; ; lookup = true {
		if lookup {
			st, err := session.LookupTurn(ctx, store, sid, w.msg.TurnID)
			if err != nil {
				return session.TurnResult{SessionID: sid, Err: err}
			}
			sid = st.Session
			switch {
			case st.Completed:
				return session.TurnResult{SessionID: st.Session, TurnID: w.msg.TurnID, Answer: st.Answer}
			case st.Started:
				t = &session.Turn{Continue: true, Model: w.model, Observe: observe, Persona: w.persona}
			}
		}
		res := sessions.RunTurn(ctx, sid, t)
		if !t.New || !errors.Is(res.Err, session.ErrNotNew) {
			return res
		}
		// Not new after all (a turn ran in the session): looked up
		// first, as after a crash.
		t.New = false
	}
}

func (c *chat) typing(ctx context.Context, out schema.Outbound) {
	out.Kind = schema.OutboundTyping
	t := time.NewTicker(c.r.cfg.TypingEvery)
	defer t.Stop()
	for {
		_ = c.r.publish(out, "")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// finish records the turn's reply in the outbox, sends it, and starts the
// next queued turn.
func (c *chat) finish(ctx actor.Context, m *turnFinished) {
	if m.made && !m.w.background {
		c.made = m.w.msg.SessionID
	}
	if m.w.background {
		c.finishBackground(m)
		return
	}
	c.running = nil
	c.r.stats.active.Add(-1)
	if c.question != nil {
		c.question.reply <- askAnswer{err: agent.ErrInterrupted}
		c.question = nil
	}
	res := m.res
	if res.SessionID != "" && res.SessionID != c.session && res.Err == nil {
		if err := c.bind(ctx, res.SessionID, "compression"); err != nil {
			c.r.log.Error().Err(err).Str("chat", c.key).Msg("record the session a compression moved to")
		}
	}
	kind, text := schema.ReplyAnswer, res.Answer
	switch {
	case errors.Is(res.Err, agent.ErrInterrupted):
		kind, text = schema.ReplyNotice, "Stopped."
	case res.Err != nil:
		kind, text = schema.ReplyError, "Sorry, that failed: "+res.Err.Error()
	case strings.TrimSpace(text) == "":
		kind, text = schema.ReplyNotice, "(no answer)"
	case m.thinking != "":
		text = thinkingBlock(m.thinking) + text
	}
	var usage *schema.Usage
	if m.w.verified && res.TurnID != "" {
		// The result carries it when the session made every call of the
		// turn; else (a turn continued from its events) the events have
		// them.
		usage = res.Usage
		if usage == nil {
			u, err := turnUsage(context.Background(), c.r.store, res.TurnID, m.w.msg.SessionID, res.SessionID)
			if err != nil {
				c.r.log.Warn().Err(err).Str("chat", c.key).Msg("sum the turn's usage")
			} else {
				usage = &u
			}
		}
	}
	seg, replace := m.segment, m.replace
	if p, ok := c.previews[m.w.msg.MessageID]; ok && m.w.recover && !replace {
		// A restart cut the streaming short: the answer takes the place
		// of the preview left half-written.
		seg, replace = p.Segment, true
	}
	if kind != schema.ReplyAnswer {
		replace = false
	}
	if err := c.replyUsage(m.w.msg, res.SessionID, res.TurnID, kind, text, m.w.corr, usage, seg, replace); err != nil {
		c.r.log.Error().Err(err).Str("chat", c.key).Msg("record a reply")
	}
	c.next(ctx)
}

// reply records a reply in the outbox and publishes it.
func (c *chat) reply(to schema.GatewayMessageReceived, sessionID, turnID, kind, text, corr string) error {
	return c.replyUsage(to, sessionID, turnID, kind, text, corr, nil, 0, false)
}

// replyUsage is reply with the token usage of the turn answered (sent, not
// recorded: the session's events hold it), replacing the preview segment
// of its answer when replace is set.
func (c *chat) replyUsage(to schema.GatewayMessageReceived, sessionID, turnID, kind, text, corr string, usage *schema.Usage, segment int, replace bool) error {
	rep := schema.GatewayReplyRequested{ReplyID: uuid.NewString(), SessionID: sessionID, TurnID: turnID, InReplyTo: to.MessageID, Kind: kind, Text: text,
		Segment: segment, Replace: replace}
	if rep.SessionID == "" {
		rep.SessionID = c.session
	}
	if err := c.record(rep); err != nil {
		// The caller is told all the same (a front door's request
		// waits for it): unrecorded, the reply is not sent again after
		// a restart, which answers the turn again from its session.
		out := c.outbound(schema.OutboundReply, rep)
		out.Usage = usage
		if kind == schema.ReplyError {
			out.Error = text
		}
		return errors.Join(err, c.r.publish(out, corr))
	}
	c.pending[rep.ReplyID] = rep
	if to.MessageID != "" {
		c.answered[to.MessageID] = true
	}
	out := c.outbound(schema.OutboundReply, rep)
	out.Usage = usage
	if kind == schema.ReplyError {
		out.Error = text
	}
	return c.r.publish(out, corr)
}

// onAsk sends a tool's question to the chat and waits for its user.
func (c *chat) onAsk(m *ask) {
	if c.running == nil {
		m.reply <- askAnswer{err: tool.ErrNoAsker}
		return
	}
	if c.question != nil {
		c.question.reply <- askAnswer{err: errors.New("superseded by another question")}
	}
	c.question = &question{q: m.q, owner: c.running.msg.User, reply: m.reply}
	rep := schema.GatewayReplyRequested{ReplyID: uuid.NewString(), SessionID: c.session, InReplyTo: "", Kind: schema.ReplyApproval, Text: m.q.Text}
	if m.q.Kind == tool.QuestionApproval {
		rep.Text += "\n\nReply /approve (once), /approve session, /approve always, or /deny."
	}
	if err := c.record(rep); err != nil {
		m.reply <- askAnswer{err: err}
		c.question = nil
		return
	}
	c.pending[rep.ReplyID] = rep
	out := c.outbound(schema.OutboundApproval, rep)
	out.Choices = m.q.Choices
	_ = c.r.publish(out, c.running.corr)
}

// answer hands user's text (or button data) to the waiting question. Only
// the user whose message started the turn may answer it.
func (c *chat) answer(user, text, corr string) error {
	if c.question == nil {
		return nil
	}
	if user != c.question.owner {
		c.r.log.Warn().Str("chat", c.key).Str("user", user).Msg("an answer from someone other than the session's user: refused")
		return appendAny(context.Background(), c.r.store, RefusedStream, schema.GatewayInboundRefused{Platform: c.info.Platform, Chat: c.info.Chat,
			User: user, Reason: "approval answered by someone other than the session's user"})
	}
	ans := text
	if c.question.q.Kind == tool.QuestionApproval {
		ans = approvalChoice(text)
	}
	c.question.reply <- askAnswer{text: ans}
	c.question = nil
	return nil
}

// approvalChoice turns "/approve session", "approval:always", "/deny" into
// the approver's choices.
func approvalChoice(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	t = strings.TrimPrefix(t, "approval:")
	if cmd, arg, ok := command.Gateway.Parse(t); ok {
		switch cmd.ID {
		case command.Approve:
			switch arg {
			case "session", "always":
				return arg
			}
			return "once"
		case command.Deny:
			return "deny"
		}
	}
	switch t {
	case "once", "session", "always", "deny":
		return t
	}
	return "deny"
}

// isAnswer reports whether text is /approve or /deny, which answer an
// approval question.
func isAnswer(text string) bool {
	cmd, _, ok := command.Gateway.Parse(text)
	return ok && (cmd.ID == command.Approve || cmd.ID == command.Deny)
}

// skillCommand reads text typed on platform as a skill command: a slash
// command the gateway does not have (/name arg), or on IRC, whose clients
// keep the slash for themselves, !name arg.
func skillCommand(platform, text string) (name, arg string, ok bool) {
	t := strings.TrimSpace(text)
	if platform == "irc" && strings.HasPrefix(t, "!") {
		t = "/" + t[1:]
	}
	cmd, arg, ok := command.Gateway.Parse(t)
	// A command of another surface (/clear) is never a skill's name.
	if !ok || cmd.ID != command.Unknown || command.Gateway.Unknown(cmd.Name).Elsewhere != 0 {
		return "", "", false
	}
	return strings.TrimPrefix(cmd.Name, "/"), arg, true
}
