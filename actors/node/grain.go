package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
)

// keepFinished is how many finished turns a grain remembers, so that a
// caller asking again after its request timed out gets the answer.
const keepFinished = 16

// grain is the session grain: the cluster activates one per session id on
// the member that owns the id, and it runs the session's turns through the
// node's session manager.
type grain struct {
	id     string
	node   string
	store  events.Store
	mgr    *session.Manager
	log    zerolog.Logger
	poll   time.Duration
	hosted *hosted
	root   *actor.RootContext
	asker  *Asker

	ctx    context.Context
	cancel context.CancelFunc
	turns  map[string]*turnRun
	order  []string // finished turn keys, oldest first
	// compressing holds a channel per compression started (closed when
	// it ends).
	compressing []chan struct{}

	// The grain passivates after its session manager's IdleAfter without
	// a turn or compression running: idleGen tells the current idle
	// spell's check from stale ones, idleTimer sends it; leaving: the
	// grain is poisoned.
	idleGen   uint64
	idleTimer *time.Timer
	leaving   bool
}

// forgotten is sent by a stopped grain to itself; it is a dead letter,
// not logged.
type forgotten struct{}

// IgnoreDeadLetterLogging implements actor.IgnoreDeadLetterLogging.
func (forgotten) IgnoreDeadLetterLogging() {}

// grainIdle comes back to an idle grain after IdleAfter.
type grainIdle struct{ gen uint64 }

// turnRun is a turn the grain started: done closes when res is set.
type turnRun struct {
	done chan struct{}
	res  reply
}

// Receive implements actor.Actor.
func (g *grain) Receive(c actor.Context) {
	g.receive(c)
	switch c.Message().(type) {
	case *grainIdle, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		g.idleClock(c)
	}
}

// idle says whether no turn or compression started here still runs.
func (g *grain) idle() bool {
	for _, r := range g.turns {
		select {
		case <-r.done:
		default:
			return false
		}
	}
	for _, d := range g.compressing {
		select {
		case <-d:
		default:
			return false
		}
	}
	return true
}

// idleClock restarts the grain's idle clock: an idle grain hears
// grainIdle after IdleAfter unless a message comes meanwhile.
func (g *grain) idleClock(c actor.Context) {
	g.idleGen++
	if g.idleTimer != nil {
		g.idleTimer.Stop()
		g.idleTimer = nil
	}
	after := g.mgr.IdleAfter()
	if g.id == "" || g.leaving || after <= 0 || !g.idle() {
		return
	}
	gen, self, root := g.idleGen, c.Self(), c.ActorSystem().Root
	g.idleTimer = time.AfterFunc(after, func() { root.Send(self, &grainIdle{gen: gen}) })
}

func (g *grain) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *cluster.ClusterInit:
		g.id = m.Identity.Identity
		g.node = c.ActorSystem().Address()
		g.root = c.ActorSystem().Root
		g.ctx, g.cancel = context.WithCancel(context.Background())
		g.log = g.log.With().Str("session", g.id).Logger()
		g.hosted.activated(g.id)
		g.log.Info().Msg("session grain activated")
	case *grainIdle:
		if m.gen != g.idleGen || g.leaving || !g.idle() {
			return
		}
		// Idle: the grain passivates, and with it the session (its
		// actor, lease and memory). Poisoned, not stopped: requests
		// already queued are handled first; later ones reach a new
		// activation (they are idempotent: a turn is looked up by id).
		g.leaving = true
		g.log.Debug().Msg("session grain idle: passivating")
		c.Poison(c.Self())
	case *actor.Stopped:
		if g.idleTimer != nil {
			g.idleTimer.Stop()
		}
		// The grain stops when it was idle for IdleAfter, when the
		// session moves to another member (one joined) or this one
		// leaves. A turn in flight is not cut short:
		// it goes on holding the session's lease, so the new owner waits
		// (its callers are answered "pending") and then answers the turn
		// from its events instead of running its model and tool calls
		// again. The session is let go when its turns are done. A member
		// that leaves stops its sessions itself (Manager.Shutdown).
		if g.id == "" {
			return
		}
		// Compressions in flight are waited for too (they write the
		// session and lease its child).
		running := append([]chan struct{}(nil), g.compressing...)
		for _, r := range g.turns {
			running = append(running, r.done)
		}
		// A send to the grain's own PID makes it drop the process it
		// caches, which the placement actor's stale reference would
		// otherwise keep, with this grain (see the session actor's
		// Stopped); a dead letter, not logged.
		c.Send(c.Self(), forgotten{})
		id, h, log, cancel := g.id, g.hosted, g.log, g.cancel
		go func() {
			for _, d := range running {
				<-d
			}
			cancel()
			if h.deactivated(id) {
				log.Info().Msg("session moved to another member: let go of it here")
			}
		}()
	case *turnEnded:
		if r := g.turns[m.key]; r != nil && r.res.Pending {
			// Refused for now (another member still runs the
			// session): the next request tries again.
			delete(g.turns, m.key)
			return
		}
		g.order = append(g.order, m.key)
		for len(g.order) > keepFinished {
			delete(g.turns, g.order[0])
			g.order = g.order[1:]
		}
	case *wrapperspb.BytesValue:
		var req request
		if err := json.Unmarshal(m.Value, &req); err != nil {
			c.Respond(encode(reply{Err: "bad request: " + err.Error(), Node: g.node}))
			return
		}
		g.handle(c, req)
	case *actor.Started, *actor.Stopping, *actor.Restarting, *actor.Terminated, *actor.ReceiveTimeout:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		g.log.Warn().Str("message_type", fmt.Sprintf("%T", m)).Msg("session grain: message not handled")
	}
}

func (g *grain) handle(c actor.Context, req request) {
	switch req.Op {
	case "turn":
		if req.ID == "" {
			c.Respond(encode(reply{Err: "a turn request needs an id", Node: g.node}))
			return
		}
		r, ok := g.turns[req.ID]
		if !ok && !g.hosted.startTurn() {
			// Draining: no new turn starts here. The caller hears
			// "pending" after the usual poll and asks again; once this
			// member has left, the session's next owner runs it.
			sender, root, poll, node := c.Sender(), c.ActorSystem().Root, g.poll, g.node
			h := g.hosted
			time.AfterFunc(poll, func() { h.send(func() { root.Send(sender, encode(reply{Pending: true, Node: node})) }) })
			return
		}
		if !ok {
			r = &turnRun{done: make(chan struct{})}
			g.turns[req.ID] = r
			self, root := c.Self(), c.ActorSystem().Root
			go func() {
				defer g.hosted.endTurn()
				r.res = g.run(g.ctx, req)
				r.res.Node = g.node
				close(r.done)
				root.Send(self, &turnEnded{key: req.ID})
			}()
		}
		sender, root, poll := c.Sender(), c.ActorSystem().Root, g.poll
		go func() {
			t := time.NewTimer(poll)
			defer t.Stop()
			select {
			case <-r.done:
				g.hosted.send(func() { root.Send(sender, encode(r.res)) })
			case <-t.C:
				g.hosted.send(func() { root.Send(sender, encode(reply{Pending: true, Node: g.node})) })
			}
		}()
	case "stop":
		g.hosted.stopAsked(g.id)
		g.mgr.Stop(g.id, req.Reason)
		c.Respond(encode(reply{Node: g.node}))
	case "compress":
		sender, root, ctx := c.Sender(), c.ActorSystem().Root, g.ctx
		done := make(chan struct{})
		live := g.compressing[:0]
		for _, d := range g.compressing {
			select {
			case <-d:
			default:
				live = append(live, d)
			}
		}
		g.compressing = append(live, done)
		go func() {
			defer close(done)
			id, err := g.mgr.Compress(ctx, g.id, req.Model)
			rep := reply{Session: id, Node: g.node}
			if err != nil {
				rep.Err = err.Error()
			}
			root.Send(sender, encode(rep))
		}()
	default:
		c.Respond(encode(reply{Err: "unknown op " + req.Op, Node: g.node}))
	}
}

// run runs the turn once on this node: a turn the session's events show
// completed is answered from them (a node that died after recording it ran
// it), one they show started is continued from its history (its recorded
// tool results are not redone), and one they do not show is run.
func (g *grain) run(ctx context.Context, req request) reply {
	if req.Stopped {
		// The caller stopped the turn: it is not started or continued
		// here, only answered (a member it ran on records how it ended).
		st, err := lookupTurn(ctx, g.store, g.id, req.ID)
		if err != nil {
			return reply{Session: g.id, Err: err.Error()}
		}
		if st.Completed {
			return reply{Session: st.Session, Turn: req.ID, Answer: st.Answer}
		}
		return reply{Session: g.id, Turn: req.ID, Err: "the turn was stopped", Interrupted: true}
	}
	t := &session.Turn{Text: req.Text, Images: req.Images, ID: req.ID, Model: req.Model, Continue: req.Continue, Trace: extractTrace(req.Trace)}
	if c := req.Caller; c != nil {
		to, root := actor.NewPID(c.Address, c.ID), g.root
		if req.Observe {
			t.Observe = func(ob agent.Observation) { root.Send(to, encode(callerMsg{Obs: &ob})) }
		}
		if g.asker != nil {
			defer g.asker.register(root.ActorSystem(), g.id, to)()
		}
	}
	// lookUp answers a turn its events show completed, and makes one they
	// show started a continuation.
	lookUp := func() (reply, bool) {
		st, err := lookupTurn(ctx, g.store, g.id, req.ID)
		if err != nil {
			return reply{Session: g.id, Err: err.Error()}, true
		}
		switch {
		case st.Completed:
			g.log.Info().Str("turn", req.ID).Msg("turn already completed: answering from its events")
			return reply{Session: st.Session, Turn: req.ID, Answer: st.Answer}, true
		case st.Started:
			g.log.Info().Str("turn", req.ID).Msg("continuing a turn another node left open")
			t.Continue, t.Text = true, ""
		}
		return reply{}, false
	}
	// A new turn (of a session its caller created for it) is not looked
	// up: the session runs it only while it holds no turn, which its
	// events, read under its lease, tell.
	t.New = req.New && !req.Continue
	if !req.Continue && !t.New {
		if rep, done := lookUp(); done {
			return rep
		}
	}
	asked := g.hosted.stopsOf(g.id)
	res := g.mgr.RunTurn(ctx, g.id, t)
	if t.New && errors.Is(res.Err, session.ErrNotNew) {
		// Not new after all (a turn ran in the session): looked up as
		// any turn.
		t.New = false
		if rep, done := lookUp(); done {
			return rep
		}
		res = g.mgr.RunTurn(ctx, g.id, t)
	}
	for try := 0; try < cutShortRetries && g.hosted.cutShort(ctx, g.id, asked, res); try++ {
		// The session stopped under the turn (its store lease went with
		// the connection, as in a store restart), no one asked it to:
		// the turn goes on from its events, in the session started again,
		// rather than end as though its caller had stopped it.
		g.log.Info().Str("turn", req.ID).Err(res.Err).Msg("the session stopped under its turn: continuing the turn")
		t.Continue, t.Text, t.Images = true, "", nil
		res = g.mgr.RunTurn(ctx, g.id, t)
	}
	var inUse *session.InUseError
	if errors.As(res.Err, &inUse) {
		if g.hosted.refusedTooLong(ctx, g.store, g.id, req.ID) {
			// Not a member finishing a turn: a process that keeps the
			// session without writing it (a chat left open elsewhere).
			return reply{Session: g.id, Err: inUse.Error()}
		}
		g.log.Info().Str("turn", req.ID).Str("holder", inUse.Owner.String()).Msg("another process still runs the session: answering pending")
		// Not at once: the caller asks again as soon as it hears.
		select {
		case <-time.After(min(g.poll, 250*time.Millisecond)):
		case <-ctx.Done():
		}
		return reply{Pending: true}
	}
	g.hosted.accepted(req.ID)
	rep := reply{Session: res.SessionID, Turn: res.TurnID, Answer: res.Answer, Usage: res.Usage}
	if res.Err != nil {
		rep.Err, rep.Interrupted = res.Err.Error(), errors.Is(res.Err, agent.ErrInterrupted)
	}
	return rep
}

// cutShortRetries bounds how many times one turn is continued after its
// session stopped under it (see hosted.cutShort).
const cutShortRetries = 3

// inUseWait is how long a turn waits for a session another process holds
// without writing it: a member finishing a turn writes as it goes, a chat
// left open elsewhere does not.
const inUseWait = 2 * time.Minute

// hosted counts the grains active on this member per session, so that a
// session is let go (its actor stopped, its lease released) only when no
// grain of it is active here any more; and it remembers since when each
// turn has been refused its session.
type hosted struct {
	mgr *session.Manager
	mu  sync.Mutex
	// active counts the grains of each session; letting holds the
	// sessions being let go (closed when done).
	active  map[string]int
	letting map[string]chan struct{}
	refused map[string]time.Time
	// draining: the member is leaving; it starts no new turn (see
	// Cluster.Drain). inflight counts the turns running here; idle is
	// closed and replaced each time it falls to zero while draining.
	draining bool
	inflight int
	idle     chan struct{}
	// stops counts, per session, the stops asked of it here (a caller's,
	// through its grain or the stopper): a turn interrupted without one
	// was cut by its session stopping under it (its lease lost with the
	// store's connection), not by anyone who wanted it to end.
	stops map[string]uint64
	// sendMu: replies sent by timers hold it for reading; leave takes it
	// to set left, after which they are dropped.
	sendMu sync.RWMutex
	left   bool
}

// stopAsked counts a stop asked of session id.
func (h *hosted) stopAsked(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stops == nil {
		h.stops = map[string]uint64{}
	}
	h.stops[id]++
}

// stopsOf is how many stops were asked of session id so far.
func (h *hosted) stopsOf(id string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stops[id]
}

// cutShort says whether res is a turn of session id interrupted though no
// stop was asked of the session since there were asked stops, while the
// member goes on.
func (h *hosted) cutShort(ctx context.Context, id string, asked uint64, res session.TurnResult) bool {
	if !errors.Is(res.Err, agent.ErrInterrupted) || ctx.Err() != nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.draining && h.stops[id] == asked
}

// send runs fn (a send to another actor) unless the member has left.
func (h *hosted) send(fn func()) {
	h.sendMu.RLock()
	defer h.sendMu.RUnlock()
	if !h.left {
		fn()
	}
}

// leave drops the replies not sent yet.
func (h *hosted) leave() {
	h.sendMu.Lock()
	h.left = true
	h.sendMu.Unlock()
}

// startTurn counts a turn that starts here, unless the member drains.
func (h *hosted) startTurn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return false
	}
	h.inflight++
	return true
}

// endTurn counts a turn that ended.
func (h *hosted) endTurn() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inflight--
	if h.inflight == 0 && h.idle != nil {
		close(h.idle)
		h.idle = nil
	}
}

// drain stops new turns and waits until the running ones end or timeout
// passes; it returns how many still run.
func (h *hosted) drain(timeout time.Duration) int {
	h.mu.Lock()
	h.draining = true
	if h.inflight == 0 {
		h.mu.Unlock()
		return 0
	}
	if h.idle == nil {
		h.idle = make(chan struct{})
	}
	idle := h.idle
	h.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inflight
}

// activated counts a grain of id, after waiting for the session to be let
// go if it is.
func (h *hosted) activated(id string) {
	for {
		h.mu.Lock()
		ch, busy := h.letting[id]
		if !busy {
			h.active[id]++
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		<-ch
	}
}

// deactivated counts a grain of id gone and lets the session go when it
// was the last; it says whether it did. Only that session's activations
// wait while it is let go.
func (h *hosted) deactivated(id string) bool {
	h.mu.Lock()
	h.active[id]--
	if h.active[id] > 0 {
		h.mu.Unlock()
		return false
	}
	delete(h.active, id)
	ch := make(chan struct{})
	h.letting[id] = ch
	h.mu.Unlock()
	h.mgr.Restart(id)
	h.mu.Lock()
	delete(h.letting, id)
	delete(h.stops, id)
	close(ch)
	h.mu.Unlock()
	return true
}

// refusedTooLong records that turn was refused session id, and says
// whether it has been for inUseWait while the session's log stayed
// still.
func (h *hosted) refusedTooLong(ctx context.Context, store events.Store, id, turn string) bool {
	h.mu.Lock()
	since, ok := h.refused[turn]
	if !ok {
		since = time.Now()
		h.refused[turn] = since
	}
	h.mu.Unlock()
	if time.Since(since) < inUseWait {
		return false
	}
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Backward, events.End, 1)
	if err != nil || len(rs) == 0 {
		return false
	}
	if time.Since(rs[0].Time) < inUseWait {
		return false
	}
	h.accepted(turn)
	return true
}

// accepted forgets a turn's refusals.
func (h *hosted) accepted(turn string) {
	h.mu.Lock()
	delete(h.refused, turn)
	h.mu.Unlock()
}
