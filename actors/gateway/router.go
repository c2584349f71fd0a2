// Package gateway is the gateway's router: it consumes what platform
// adapters publish on the bus, decides who may reach the agent (allow-lists
// and pairing), keys a session per chat, runs turns through the session
// manager, and publishes the replies back — recording every step as an
// event first, so that a crash loses no message and a platform message
// delivered twice starts no second turn.
//
// One router actor supervises one chat actor per chat; a chat actor owns
// its chat's stream (gateway-chat-…) and is the only writer of it.
package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Streams of the gateway besides the chats' own.
const (
	// ChatIndexStream lists every chat stream (GatewayChatOpened).
	ChatIndexStream = "gateway-chats"
	// RefusedStream records messages that reached no agent.
	RefusedStream = "gateway-refused"
	// HomesStream records the platforms' home channels (/sethome).
	HomesStream = "gateway-homes"
)

// Home is platform's home channel, as the last /sethome there made it;
// ok is false when none was set.
func Home(ctx context.Context, store events.Store, platform string) (h schema.GatewayHomeSet, ok bool, err error) {
	rs, err := store.ReadStream(ctx, HomesStream, events.Forward, 0, 0)
	if err != nil || len(rs) == 0 {
		return h, false, err
	}
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return h, false, err
		}
		if e, isHome := p.(schema.GatewayHomeSet); isHome && e.Platform == platform {
			h, ok = e, true
		}
	}
	return h, ok, nil
}

// DispatchDecision is what Config.Dispatch decides about a message: drop
// it (Skip, for Reason), or go on with Text in place of its own (when
// Rewrite is set).
type DispatchDecision struct {
	Skip    bool
	Reason  string
	Rewrite bool
	Text    string
}

// turnSpace names the ids of turns TurnIDFor makes.
var turnSpace = uuid.MustParse("6d1f3c2e-8a4b-4f6e-9c1d-2b7a5e0f4c83")

// TurnIDFor is the id of the turn a verified front door's message runs as:
// derived from the message's id, which such a door makes unique (the API
// server's request ids), so that the door finds the turn again from the
// message alone — the API server answers GET /v1/responses/{id} from the
// session's events this way.
func TurnIDFor(platform, messageID string) string {
	return uuid.NewSHA1(turnSpace, []byte(platform+"\x00"+messageID)).String()
}

// MaxQueued bounds the messages a chat has waiting for a turn while one
// runs; one more is refused with a message saying so.
const MaxQueued = 32

// MaxTextBytes bounds the text of a message a person typed on a chat
// platform; longer ones are refused with a message saying so.
const MaxTextBytes = 64 << 10

// MaxVerifiedTextBytes bounds the text of a message from a verified front
// door (the API server, a signed webhook): programs such as chat front ends
// resend a whole conversation with every request. It stays under the
// 1 MiB a NATS server carries in one message by default, envelope included,
// so that the same message crosses a distributed gateway's bus.
const MaxVerifiedTextBytes = 960 << 10

// Sessions is what the router needs of the session manager.
type Sessions interface {
	RunTurn(ctx context.Context, id string, t *session.Turn) session.TurnResult
	Stop(id, reason string)
	Compress(ctx context.Context, id, model string) (string, error)
}

// Config tunes the router.
type Config struct {
	Auth Auth
	// Busy is what a message arriving during a turn does: queue (the
	// default: it runs after) or interrupt (the turn stops, it runs next).
	Busy string
	// GroupsWithoutMention answers every message in group chats, not only
	// those that mention the bot or reply to it.
	GroupsWithoutMention bool
	// SharedGroupSessions gives a group chat one session for everyone
	// instead of one per user.
	SharedGroupSessions bool
	// NewSession creates a session for a chat of platform.
	NewSession func(ctx context.Context, platform string) (string, error)
	// CreateSession, when set, creates session id for a chat of platform;
	// the router then names new sessions itself and creates each in its
	// first turn, off the path that acknowledges the message (one durable
	// write less before the next message is taken).
	CreateSession func(ctx context.Context, platform, id string) error
	// Model is the configured model (shown by /status).
	Model string
	// Personalities are what /personality offers: prompts by name.
	Personalities map[string]string
	// Version is what /version answers (the program's version line).
	Version string
	// Prices price /usage (nil: model.DefaultPrices()).
	Prices model.Prices
	// IdleReset starts a new session for a chat idle this long (0: never).
	IdleReset time.Duration
	// ChatIdle stops the actor of a chat that held no work for this long
	// (0: never); its next message starts it again from its stream, so
	// that a long-running gateway's memory follows the chats at work,
	// not the chats it has seen.
	ChatIdle time.Duration
	// TypingEvery repeats the typing indicator while a turn runs
	// (default 4 s; platforms show it for about 5).
	TypingEvery time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// Acks records the delivery outcome of a message the router did not
	// send itself: one whose Key starts with "cron/" (the scheduler's).
	// It runs beside the router actor; the bus message is acknowledged
	// once it returns nil.
	Acks func(schema.Inbound) error
	// Dispatch, when set, hears each message a person sent before its
	// chat acts on it (the pre_gateway_dispatch hooks): it may drop the
	// message (the hook handled it) or rewrite its text. It runs in the
	// chat, after authorisation: a stranger's message never reaches it.
	Dispatch func(ctx context.Context, in schema.Inbound) DispatchDecision
	// Images, when set, keeps the images among a message's attachments in
	// the blob store before its turn starts and returns their references
	// (the turn's user message names them), with a line for each image it
	// could not take (too large, not an image). Nil: the model gets the
	// text only.
	Images func(ctx context.Context, atts []schema.Attachment) ([]schema.ImageRef, []string, error)
	// Skill, when set, turns a skill command typed in a chat of platform
	// (/name, !name on IRC, with arg after it) into the turn that loads
	// the skills, in session id ("" before the chat has one); an error
	// that is ErrNotSkill leaves it an unknown command, another is told
	// to the person (a skill not offered there, and why).
	Skill func(ctx context.Context, platform, id, name, arg string) (SkillTurn, error)
	// Memory answers /memory (its argument) in a chat of platform; nil:
	// the command says memory review is not available.
	Memory func(ctx context.Context, platform, arg string) (string, error)
	// Insights answers /insights (its argument).
	Insights func(ctx context.Context, arg string) (string, error)
	// Info answers the commands that show what the agent has in a chat of
	// platform: /tools, /skills and /bundles (id, with its argument); nil:
	// they say they are not available.
	Info func(ctx context.Context, platform string, id command.ID, arg string) (string, error)
	// Display, when set, says how the chats of a platform see a turn
	// while it runs: the answer streamed as previews, tool-progress lines.
	// Nil: the answer only. Front doors' messages (the API server's,
	// webhooks') are never shown so: the API streams its own deltas.
	Display func(platform string) Display
}

// SkillTurn is the turn a skill command starts: the message the model
// gets, and the skills it loads (recorded with it as their uses).
type SkillTurn struct {
	Text   string
	Skills []string
}

// ErrNotSkill is what Config.Skill returns for a name that is no skill.
var ErrNotSkill = errors.New("no skill of that name")

// Router is the gateway's router. Create it with New, set Sessions, then
// Run it.
type Router struct {
	store    events.Store
	bus      wire.Transport
	sys      *actor.ActorSystem
	cfg      Config
	log      zerolog.Logger
	Sessions Sessions

	pid   *actor.PID
	stats *Stats
	ready chan struct{}

	// pairFrom is the revision of the pairing stream the router follows
	// it from (the one after those it folded on start); pairSeen is the
	// revision of the last pairing event the router applied, plus one (0:
	// none).
	pairFrom uint64
	pairSeen atomic.Uint64

	outMu     sync.Mutex
	outq      map[string]chan queued
	outClosed bool
	outWG     sync.WaitGroup

	// liveChats counts the chats whose actors run now.
	liveChats atomic.Int64
}

// LiveChats is how many chats have an actor running now: those at work,
// and those idle for less than Config.ChatIdle.
func (r *Router) LiveChats() int64 { return r.liveChats.Load() }

type queued struct {
	out  schema.Outbound
	corr string
}

// New returns a router on store and the bus transport b (an adapters/bus
// Bus's Transport), spawning its actors in sys.
func New(store events.Store, b wire.Transport, sys *actor.ActorSystem, cfg Config, log zerolog.Logger) *Router {
	if cfg.Busy == "" {
		cfg.Busy = "queue"
	}
	if cfg.TypingEvery <= 0 {
		cfg.TypingEvery = 4 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Router{store: store, bus: b, sys: sys, cfg: cfg, log: log.With().Str("component", "gateway").Logger(),
		stats: newStats(), ready: make(chan struct{}), outq: map[string]chan queued{}}
}

// Stats returns the router's counters.
func (r *Router) Stats() *Stats { return r.stats }

// Ready is closed once the router has recovered its chats and subscribed.
func (r *Router) Ready() <-chan struct{} { return r.ready }

// PairingRevision is the revision of the last event of the pairing stream
// the router has applied (ok false: none yet). The router follows the
// stream, so a pairing approved or revoked by another process (`hermes
// pairing revoke`) applies to the next message once this has reached the
// revision it was recorded at.
func (r *Router) PairingRevision() (rev uint64, ok bool) {
	n := r.pairSeen.Load()
	if n == 0 {
		return 0, false
	}
	return n - 1, true
}

func (r *Router) notePairings(p *Pairings) {
	if p.Exists {
		r.pairSeen.Store(p.Revision + 1)
	}
}

// PairingPoll is how often the router reads the pairing stream for what
// other processes recorded: a revocation bites within it.
const PairingPoll = 200 * time.Millisecond

// followPairings hands the router actor every event of the pairing stream
// from revision from on, by any process, until ctx ends: a revocation
// recorded by the CLI or by another gateway of a cluster bites on the next
// message. It reads the pairing stream itself, not the global log: one
// indexed read per PairingPoll costs nothing, where following the log
// would read every event of every session again.
func (r *Router) followPairings(ctx context.Context, from uint64) {
	t := time.NewTicker(PairingPoll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rs, err := r.store.ReadStream(ctx, PairingStream, events.Forward, from, 0)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, events.ErrLogLost) || errors.Is(err, events.ErrClosed):
			// The store has stopped working for good: reading again would
			// only say so again.
			r.log.Error().Err(err).Msg("follow the pairing stream: stopped")
			return
		case err != nil:
			if !failing {
				r.log.Warn().Err(err).Msg("follow the pairing stream: read failed, trying again")
			}
			failing = true
			continue
		}
		failing = false
		for _, rec := range rs {
			r.sys.Root.Send(r.pid, &pairingRecorded{rec: rec})
			from = rec.Revision + 1
		}
	}
}

// pairingRecorded is an event of the pairing stream, as followed.
type pairingRecorded struct{ rec events.Recorded }

// Run recovers every chat (replies recorded but not delivered are sent
// again, turns a crash cut short are finished), then consumes the gateway_in_N topics
// until ctx ends. It returns after the bus handler and the chats stopped.
func (r *Router) Run(ctx context.Context) error {
	if r.Sessions == nil {
		return errors.New("gateway router: no session manager")
	}
	wr, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, r.bus.Logger)
	if err != nil {
		return err
	}
	poison, err := middleware.PoisonQueue(r.bus.Publisher, "gateway_poison")
	if err != nil {
		return err
	}
	wr.AddMiddleware(
		middleware.CorrelationID,
		poison,
		middleware.Retry{MaxRetries: 5, InitialInterval: 100 * time.Millisecond, MaxInterval: 2 * time.Second, Multiplier: 2, Logger: r.bus.Logger}.Middleware,
		middleware.Recoverer,
	)
	for _, topic := range wire.InTopics() {
		wr.AddConsumerHandler(topic, topic, r.bus.Subscriber, r.handle)
	}

	started := make(chan error, 1)
	r.pid = r.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &routerActor{r: r, chats: map[string]*actor.PID{}, sessionChat: map[string]string{}, started: started, sent: map[string]int{}, chatSessions: map[string][]string{}}
	}, actor.WithSupervisor(actor.NewOneForOneStrategy(10, 10*time.Second, actor.DefaultDecider))))
	if err := <-started; err != nil {
		r.sys.Root.StopFuture(r.pid).Wait()
		return err
	}
	fctx, stopFollow := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		r.followPairings(fctx, r.pairFrom)
	}()
	defer func() { stopFollow(); <-followed }()
	runErr := make(chan error, 1)
	go func() { runErr <- wr.Run(ctx) }()
	select {
	case <-wr.Running():
		close(r.ready)
	case err := <-runErr:
		r.sys.Root.StopFuture(r.pid).Wait()
		return err
	}
	<-ctx.Done()
	_ = wr.Close()
	err = <-runErr
	// Turns in flight are interrupted (and recorded so) by the session
	// actors' shutdown, which the caller does; the chats stop here.
	r.sys.Root.StopFuture(r.pid).Wait()
	r.outMu.Lock()
	r.outClosed = true
	for p, q := range r.outq {
		close(q)
		delete(r.outq, p)
	}
	r.outMu.Unlock()
	r.outWG.Wait()
	return err
}

// handle is the bus handler of the gateway_in_N topics: it returns once what arrived is
// recorded (or refused), so an acknowledged message is never lost.
func (r *Router) handle(msg *message.Message) error {
	var in schema.Inbound
	if err := wire.Decode(msg, &in); err != nil {
		r.log.Warn().Err(err).Msg("dropping a malformed bus message")
		r.stats.err("", err)
		return nil
	}
	done := make(chan error, 1)
	r.sys.Root.Send(r.pid, &inbound{in: in, corr: wire.Correlation(msg), done: done})
	select {
	case err := <-done:
		if err != nil {
			r.stats.err(in.Platform, err)
		}
		return err
	case <-msg.Context().Done():
		return msg.Context().Err()
	}
}

// publish queues out for its platform's topic. One queue per platform
// keeps a chat's messages in order, and the actors never wait for a
// delivery: publishing waits for the adapter, whose acknowledgement comes
// back through the actors. What is lost from the queue by a crash is in the
// outbox and sent again on restart.
func (r *Router) publish(out schema.Outbound, corr string) error {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.outClosed {
		return errors.New("gateway stopped")
	}
	q, ok := r.outq[out.Platform]
	if !ok {
		q = make(chan queued, 4096)
		r.outq[out.Platform] = q
		r.outWG.Add(1)
		go r.pump(q)
	}
	select {
	case q <- queued{out, corr}:
		return nil
	default:
		// Full: the platform is far behind. The reply stays in the outbox.
		return fmt.Errorf("outbound queue of %s is full", out.Platform)
	}
}

func (r *Router) pump(q chan queued) {
	defer r.outWG.Done()
	var batch []queued
	for m := range q {
		// What queued up meanwhile goes too, the deltas of one answer
		// merged: over NATS each message is a stored publish and an
		// acknowledged delivery, and a model streams many pieces.
		batch = append(batch[:0], m)
	more:
		for len(batch) < maxPumpBatch {
			select {
			case m, ok := <-q:
				if !ok {
					break more
				}
				batch = append(batch, m)
			default:
				break more
			}
		}
		for _, m := range coalesceDeltas(batch) {
			err := wire.Publish(r.bus.Publisher, wire.Out(m.out.Platform), m.out, m.corr)
			if err != nil {
				r.stats.err(m.out.Platform, err)
				r.log.Warn().Err(err).Str("platform", m.out.Platform).Msg("publish")
			} else if m.out.Kind == schema.OutboundReply || m.out.Kind == schema.OutboundApproval {
				r.stats.add(m.out.Platform, func(p *PlatformStats) { p.Out++ })
			}
		}
	}
}

// maxPumpBatch bounds how many queued messages one pass of pump takes.
const maxPumpBatch = 256

// coalesceDeltas merges each delta into the delta before it when both
// answer the same message of the same chat and nothing else of that chat
// lies between them: the chat sees the same text in the same order, in
// fewer messages. It reuses ms.
func coalesceDeltas(ms []queued) []queued {
	if len(ms) < 2 {
		return ms
	}
	out := ms[:0]
	last := map[string]int{} // chat key → index in out of its latest message
	for _, m := range ms {
		if m.out.Kind == schema.OutboundDelta {
			if i, ok := last[m.out.Key]; ok {
				p := &out[i]
				if p.out.Kind == schema.OutboundDelta && p.out.InReplyTo == m.out.InReplyTo && p.out.SessionID == m.out.SessionID && p.corr == m.corr {
					p.out.Text += m.out.Text
					continue
				}
			}
		}
		last[m.out.Key] = len(out)
		out = append(out, m)
	}
	return out
}

type routerActor struct {
	r           *Router
	pairings    *Pairings
	chats       map[string]*actor.PID
	sessionChat map[string]string
	started     chan error
	// sent counts the messages handed to each chat's actor, so that an
	// idle chat is stopped only when none is on its way (chatIdle).
	sent map[string]int
	// chatSessions are the sessions each chat bound, to forget with it.
	chatSessions map[string][]string
	// gen names each chat actor apart from an earlier one of its chat
	// still stopping.
	gen int
}

// deliver hands m to the actor of chat key.
func (a *routerActor) deliver(c actor.Context, key string, pid *actor.PID, m *inbound) {
	a.sent[key]++
	c.Send(pid, m)
}

func (a *routerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.started <- a.recover(c)
	case *inbound:
		a.route(c, m)
	case *chatOf:
		if key, ok := a.sessionChat[m.session]; ok {
			pid, err := a.spawnChat(c, key, nil) // started again if it had stopped, idle
			if err != nil {
				a.r.log.Error().Err(err).Str("chat", key).Msg("start chat")
			}
			m.reply <- pid
			return
		}
		m.reply <- nil
	case *chatIdle:
		// Stopped only if nothing was sent to it since it said so; the
		// next message starts it again from its stream.
		if a.chats[m.key] == m.pid && a.sent[m.key] == m.recv {
			delete(a.chats, m.key)
			delete(a.sent, m.key)
			// Its sessions are found again when it starts again (it
			// binds its session as it recovers).
			for _, sid := range a.chatSessions[m.key] {
				if a.sessionChat[sid] == m.key {
					delete(a.sessionChat, sid)
				}
			}
			delete(a.chatSessions, m.key)
			a.r.liveChats.Add(-1)
			c.Stop(m.pid)
		}
	case *bound:
		a.sessionChat[m.session] = m.key
		a.chatSessions[m.key] = append(a.chatSessions[m.key], m.session)
	case *pairingRecorded:
		a.followPairing(m.rec)
	case *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		a.r.log.Warn().Str("message_type", fmt.Sprintf("%T", m)).Msg("router actor: message not handled")
	}
}

// recover spawns a chat actor for every chat the gateway ever had: each
// folds its stream, sends again what was not delivered and finishes what a
// crash cut short.
func (a *routerActor) recover(c actor.Context) error {
	ctx := context.Background()
	p, err := LoadPairings(ctx, a.r.store)
	if err != nil {
		return err
	}
	a.pairings = p
	if p.Exists {
		a.r.pairFrom = p.Revision + 1
	}
	a.r.notePairings(p)
	rs, err := a.r.store.ReadStream(ctx, ChatIndexStream, events.Forward, 0, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", ChatIndexStream, err)
	}
	for _, rec := range rs {
		pl, err := schema.Decode(rec.Envelope)
		if err != nil {
			return &events.CorruptEventError{Stream: rec.Stream, Revision: rec.Revision, Position: rec.Position, Err: err}
		}
		o, ok := pl.(schema.GatewayChatOpened)
		if !ok {
			continue
		}
		if _, err := a.spawnChat(c, o.Key, nil); err != nil {
			return err
		}
	}
	return nil
}

func (a *routerActor) spawnChat(c actor.Context, key string, first *schema.Inbound) (*actor.PID, error) {
	if pid, ok := a.chats[key]; ok {
		return pid, nil
	}
	ch := &chat{r: a.r, key: key, stream: ChatStream(key), seen: map[string]bool{}, answered: map[string]bool{},
		pending: map[string]schema.GatewayReplyRequested{}, previews: map[string]schema.GatewayReplyPreviewed{}, first: first}
	a.gen++
	pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return ch }), fmt.Sprintf("chat-%s-%d", streamHash(key), a.gen))
	if err != nil {
		return nil, fmt.Errorf("start chat %s: %w", key, err)
	}
	a.chats[key] = pid
	a.r.liveChats.Add(1)
	return pid, nil
}

// route authorises a message and hands it to its chat.
func (a *routerActor) route(c actor.Context, m *inbound) {
	in := &m.in
	switch in.Kind {
	case schema.InboundDelivered, schema.InboundFailed, schema.InboundCallback, schema.InboundPreviewed:
		if a.r.cfg.Acks != nil && (in.Kind == schema.InboundDelivered || in.Kind == schema.InboundFailed) && strings.HasPrefix(in.Key, "cron/") {
			ack := *in
			go func() { m.done <- a.r.cfg.Acks(ack) }()
			return
		}
		pid, ok := a.chats[in.Key]
		if !ok {
			a.r.log.Warn().Str("key", in.Key).Str("kind", in.Kind).Msg("no such chat: ignoring")
			m.done <- nil
			return
		}
		a.deliver(c, in.Key, pid, m)
		return
	case schema.InboundRefused:
		// A front door turned a request away itself (a webhook's bad
		// signature or replayed delivery) and has no store of its own.
		m.done <- a.recordRefusal(in)
		return
	case "", schema.InboundMessage:
	default:
		m.done <- nil
		a.r.log.Warn().Str("kind", in.Kind).Msg("unknown inbound kind: ignoring")
		return
	}
	if in.Platform == "" || in.Chat == "" || in.User == "" {
		a.r.log.Warn().Str("platform", in.Platform).Msg("inbound message without platform, chat or user: dropped")
		m.done <- nil
		return
	}
	if !utf8.ValidString(in.Text) {
		in.Text = strings.ToValidUTF8(in.Text, "\uFFFD")
	}
	a.r.stats.add(in.Platform, func(p *PlatformStats) { p.In++ })
	if !in.Verified && !a.r.cfg.Auth.Allowed(in.Platform, in.User) && !a.paired(in.Platform, in.User) {
		m.done <- a.refuse(in, m.corr)
		return
	}
	if in.ChatType == "group" && !in.Mentioned && !a.r.cfg.GroupsWithoutMention && !in.Verified {
		m.done <- nil
		return
	}
	key := ChatKey(*in, a.r.cfg.SharedGroupSessions)
	pid, err := a.spawnChat(c, key, in)
	if err != nil {
		m.done <- err
		return
	}
	a.deliver(c, key, pid, m)
}

// followPairing applies a pairing event another process (or this one)
// recorded.
func (a *routerActor) followPairing(rec events.Recorded) {
	if err := a.pairings.follow(context.Background(), a.r.store, rec); err != nil {
		a.r.log.Warn().Err(err).Msg("follow the pairing stream")
	}
	a.r.notePairings(a.pairings)
	if rec.Type == schema.TypePairingRevoked {
		a.r.log.Info().Uint64("revision", rec.Revision).Msg("a pairing was revoked: its user is refused from the next message on")
	}
}

func (a *routerActor) paired(platform, user string) bool {
	if a.pairings.IsPaired(platform, user) {
		return true
	}
	// `hermes pairing approve` runs in another process: look again (the
	// follow would bring it too, a moment later).
	if err := a.pairings.refresh(context.Background(), a.r.store); err != nil {
		a.r.log.Warn().Err(err).Msg("read pairings")
	}
	a.r.notePairings(a.pairings)
	return a.pairings.IsPaired(platform, user)
}

// refuse records a message from someone not allowed and, in a direct chat
// with pairing on, gives them a code to hand to the owner.
func (a *routerActor) refuse(in *schema.Inbound, corr string) error {
	ctx := context.Background()
	a.r.stats.add(in.Platform, func(p *PlatformStats) { p.Refused++ })
	reason := "not on an allow-list"
	var notice string
	if a.r.cfg.Auth.Pairing && in.ChatType != "group" {
		code, err := a.pairings.Request(ctx, a.r.store, in.Platform, in.User, in.UserName, in.Chat, a.r.cfg.Now())
		var wrong *events.WrongExpectedVersionError
		if errors.As(err, &wrong) {
			// Another process wrote a pairing meanwhile: read it, try once more.
			if err = a.pairings.refresh(ctx, a.r.store); err == nil {
				code, err = a.pairings.Request(ctx, a.r.store, in.Platform, in.User, in.UserName, in.Chat, a.r.cfg.Now())
			}
		}
		a.r.notePairings(a.pairings)
		switch {
		case err == nil:
			reason = "not allowed: pairing code sent"
			notice = fmt.Sprintf("I don't know you yet. Your pairing code is %s — ask my owner to run:\n\nhermes pairing approve %s\n\nThe code expires in %s.", code, code, CodeTTL)
		case errors.Is(err, ErrPairingLimited):
			reason = "not allowed: " + err.Error()
			notice = "I don't know you yet, and no new pairing code can be given right now: " + strings.TrimPrefix(err.Error(), ErrPairingLimited.Error()+": ") + "."
		default:
			return err
		}
	}
	if err := appendAny(ctx, a.r.store, RefusedStream, schema.GatewayInboundRefused{Platform: in.Platform, Chat: in.Chat, User: in.User,
		MessageID: in.MessageID, Reason: reason}); err != nil {
		return err
	}
	a.r.log.Info().Str("platform", in.Platform).Str("user", in.User).Str("reason", reason).Msg("message refused")
	if notice != "" {
		// Not kept in the outbox: it holds the code, which is stored
		// only as a hash. A lost notice is asked for again.
		return a.r.publish(schema.Outbound{Kind: schema.OutboundNotice, Platform: in.Platform, Chat: in.Chat, Thread: in.Thread, InReplyTo: in.MessageID, Text: notice}, corr)
	}
	return nil
}

// recordRefusal records what a front door refused (Inbound.Error says why).
func (a *routerActor) recordRefusal(in *schema.Inbound) error {
	a.r.stats.add(in.Platform, func(p *PlatformStats) { p.Refused++ })
	reason := in.Error
	if reason == "" {
		reason = "refused by the platform adapter"
	}
	a.r.log.Info().Str("platform", in.Platform).Str("chat", in.Chat).Str("reason", reason).Msg("request refused")
	return appendAny(context.Background(), a.r.store, RefusedStream, schema.GatewayInboundRefused{Platform: in.Platform, Chat: in.Chat,
		User: in.User, MessageID: in.MessageID, Reason: reason})
}

// ChatKey names the chat a message belongs to: platform, chat and thread,
// and in group chats the user too unless groups share one session.
func ChatKey(in schema.Inbound, sharedGroups bool) string {
	parts := []string{in.Platform, in.Chat}
	if in.Thread != "" {
		parts = append(parts, "t:"+in.Thread)
	}
	if in.ChatType == "group" && !sharedGroups {
		parts = append(parts, "u:"+in.User)
	}
	return strings.Join(parts, "/")
}

// ChatStream is the stream of the chat named key.
func ChatStream(key string) string {
	platform, _, _ := strings.Cut(key, "/")
	return "gateway-chat-" + platform + "-" + streamHash(key)
}

func streamHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:8])
}

func appendAny(ctx context.Context, store events.Store, stream string, pl schema.Payload) error {
	env, err := schema.NewEnvelope(schema.Meta{}, pl)
	if err != nil {
		return err
	}
	_, err = store.Append(ctx, stream, events.Any, env)
	return err
}

// Stats are the router's counters, per platform.
type Stats struct {
	mu     sync.Mutex
	m      map[string]*PlatformStats
	active atomic.Int64
}

// Active is the number of chats with a turn in flight.
func (s *Stats) Active() int { return int(s.active.Load()) }

// PlatformStats counts one platform's traffic.
type PlatformStats struct {
	In, Out, Refused, Errors int64
	LastError                string
	LastErrorAt              time.Time
}

func newStats() *Stats { return &Stats{m: map[string]*PlatformStats{}} }

func (s *Stats) add(platform string, f func(*PlatformStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[platform]
	if !ok {
		p = &PlatformStats{}
		s.m[platform] = p
	}
	f(p)
}

func (s *Stats) err(platform string, err error) {
	s.add(platform, func(p *PlatformStats) { p.Errors++; p.LastError, p.LastErrorAt = err.Error(), time.Now() })
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() map[string]PlatformStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]PlatformStats, len(s.m))
	for k, v := range s.m {
		out[k] = *v
	}
	return out
}
