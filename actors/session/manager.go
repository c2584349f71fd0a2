package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
)

// DefaultIdleAfter is how long a session stays idle before its actor
// passivates when Deps.IdleAfter is zero.
const DefaultIdleAfter = 10 * time.Minute

// Manager spawns session actors on demand under one supervisor, which
// restarts a failed session (it recovers from its stream) a bounded number
// of times. A session idle for Deps.IdleAfter passivates: its actor stops,
// releasing its lease, files and memory, and the next use spawns it again
// from its stream, so that what a long-running process holds follows its
// active sessions, not every session it ever saw.
type Manager struct {
	sys    *actor.ActorSystem
	deps   Deps
	parent *actor.PID
	mu     sync.Mutex
	pids   map[string]*entry
	// moved maps a session that compression continued a running actor's
	// conversation in to that actor's entry: the actor writes it (and
	// holds its lease), so it is the one to use for it.
	moved map[string]*entry
}

// entry is a session's actor as the manager knows it.
type entry struct {
	id string
	// pid is nil while the actor starts; started is closed when it has
	// (pid set), or failed to (err set, and the entry dropped).
	pid     *actor.PID
	started chan struct{}
	err     error
	// moved lists the sessions its conversation moved on to.
	moved []string
	// users counts callers between taking the actor and hearing its
	// answer: an actor with users does not passivate, so that no message
	// of theirs lands in the mailbox of an actor that stops.
	users int
	// leaving: the actor is stopping (passivating or restarted); callers
	// wait for gone and start a new one.
	leaving bool
	// gone is closed once the actor has stopped (its lease released).
	gone chan struct{}
}

// NewManager starts the sessions supervisor.
func NewManager(sys *actor.ActorSystem, deps Deps) *Manager {
	if deps.AuxCooldown == nil {
		deps.AuxCooldown = &compress.Cooldown{}
	}
	if deps.IdleAfter == 0 {
		deps.IdleAfter = DefaultIdleAfter
	}
	m := &Manager{sys: sys, deps: deps, pids: map[string]*entry{}, moved: map[string]*entry{}}
	strategy := actor.NewOneForOneStrategy(3, 10*time.Second, actor.DefaultDecider)
	m.parent = sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch s := c.Message().(type) {
		case *spawn:
			pid, err := c.SpawnNamed(props(s.id, deps, s.ready, m.passivate), s.id)
			if err != nil {
				c.Respond(err)
				return
			}
			c.Respond(pid)
		case *actor.Terminated:
			// A session actor stopped (passivated, restarted, or given
			// up by this supervisor): forget it, so that its next use
			// starts a new one. Not here: the manager's lock is held
			// while it asks this actor to spawn.
			id, ok := strings.CutPrefix(s.Who.Id, c.Self().Id+"/")
			if ok {
				go m.stopped(id, s.Who)
			}
		case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.ReceiveTimeout:
			// Lifecycle messages protoactor delivers that need nothing here.
		default:
			deps.Log.Warn().Str("message_type", fmt.Sprintf("%T", s)).Msg("sessions supervisor: message not handled")
		}
	}, actor.WithSupervisor(strategy)))
	return m
}

// IdleAfter is how long a session stays idle before its actor passivates
// (negative: never).
func (m *Manager) IdleAfter() time.Duration { return m.deps.IdleAfter }

// Active is how many session actors run now (passivated ones are not
// counted).
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.pids {
		if e.pid != nil && !e.leaving {
			n++
		}
	}
	return n
}

// passivate is a session actor asking to stop because it is idle: it may
// unless a caller is using it. From then on, callers wait for it to be
// gone and start a new one.
func (m *Manager) passivate(id string, pid *actor.PID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pids[id]
	if ok && e.pid == nil {
		return false // being handed out: it is this actor
	}
	// Pointers are compared: a new incarnation has the same name.
	if !ok || e.pid != pid {
		return true // not handed out: nobody sends to it
	}
	if e.users > 0 || e.leaving {
		return false
	}
	e.leaving = true
	return true
}

// stopped forgets session id's actor pid once it has stopped.
func (m *Manager) stopped(id string, pid *actor.PID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.pids[id]; ok && e.pid == pid {
		delete(m.pids, id)
		for _, s := range e.moved {
			if m.moved[s] == e {
				delete(m.moved, s)
			}
		}
		close(e.gone)
	}
}

// lookup is the live entry that runs session id, if any; m.mu is held.
func (m *Manager) lookup(id string) (*entry, bool) {
	if e, ok := m.pids[id]; ok {
		return e, true
	}
	e, ok := m.moved[id]
	return e, ok
}

// movedOn notes that e's conversation goes on in session to (compression
// made it): e's actor writes it and holds its lease, so uses of to go to
// e until it stops.
func (m *Manager) movedOn(e *entry, to string) {
	if to == "" || to == e.id {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pids[to]; ok || m.pids[e.id] != e || e.leaving {
		return
	}
	if _, ok := m.moved[to]; !ok {
		m.moved[to] = e
		e.moved = append(e.moved, to)
	}
}

// Session returns the actor of session id, spawning it (and so leasing and
// recovering it from its stream) on first use and after it passivated. A
// session another live process runs is refused with an *InUseError. The
// actor passivates once idle, so messages go through the Manager's
// methods (which keep it from passivating until answered), not to a PID
// kept from here.
func (m *Manager) Session(ctx context.Context, id string) (*actor.PID, error) {
	e, err := m.take(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return e.pid, nil
}

// use takes session id's actor for a caller that sends it a message and
// waits for its answer; done must be called after.
func (m *Manager) use(ctx context.Context, id string) (*entry, func(), error) {
	e, err := m.take(ctx, id, true)
	if err != nil {
		return nil, nil, err
	}
	return e, func() {
		m.mu.Lock()
		e.users--
		m.mu.Unlock()
	}, nil
}

func (m *Manager) take(ctx context.Context, id string, user bool) (*entry, error) {
	for {
		m.mu.Lock()
		e, ok := m.lookup(id)
		if ok && e.leaving {
			// Passivating or restarting: wait until it is gone (its
			// lease released), then start it anew.
			m.mu.Unlock()
			select {
			case <-e.gone:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if ok && e.pid == nil {
			// Starting: wait for its outcome, which is theirs too
			// unless it was the starter's context that ended.
			m.mu.Unlock()
			select {
			case <-e.started:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.err != nil && !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded) {
				return nil, e.err
			}
			continue
		}
		if !ok {
			// Started outside the lock: a recovery reading a long
			// stream holds up only the callers of this session.
			e = &entry{id: id, started: make(chan struct{}), gone: make(chan struct{})}
			m.pids[id] = e
			m.mu.Unlock()
			pid, err := m.start(ctx, id)
			m.mu.Lock()
			if err != nil {
				delete(m.pids, id)
				e.err = err
				close(e.started)
				m.mu.Unlock()
				return nil, err
			}
			e.pid = pid
			close(e.started)
		}
		if user {
			e.users++
		}
		m.mu.Unlock()
		return e, nil
	}
}

// start spawns session id's actor and waits for its recovery. A session
// with no events fails its recovery ("no session"), which reads the stream
// anyway: no read of its own first (a read per session start, on every
// cluster turn of a new conversation).
func (m *Manager) start(ctx context.Context, id string) (*actor.PID, error) {
	ready := make(chan error, 1)
	res, err := m.sys.Root.RequestFuture(m.parent, &spawn{id, ready}, 30*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("start session %s: %w", id, err)
	}
	switch v := res.(type) {
	case *actor.PID:
		select {
		case err = <-ready:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			m.sys.Root.StopFuture(v).Wait()
			var inUse *InUseError
			if errors.As(err, &inUse) {
				return nil, err
			}
			return nil, fmt.Errorf("start session %s: %w", id, err)
		}
		return v, nil
	case error:
		return nil, fmt.Errorf("start session %s: %w", id, v)
	}
	return nil, fmt.Errorf("start session %s: unexpected %T", id, res)
}

// Run runs one turn and waits for it. When ctx ends first, the turn is
// stopped (recorded as interrupted) and Run waits for that to be written.
func (m *Manager) Run(ctx context.Context, id, text string, observe agent.Observer) TurnResult {
	return m.RunTurn(ctx, id, &Turn{Text: text, Observe: observe})
}

// RunTurn is Run with every field of a Turn; its Reply is set here, on
// the copy sent (and its ID when it has none, on t). A turn whose actor stopped before it started
// (restarted meanwhile) is sent once more to a new actor.
func (m *Manager) RunTurn(ctx context.Context, id string, t *Turn) TurnResult {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	for attempt := 0; ; attempt++ {
		r, gone := m.runTurn(ctx, id, t)
		if !gone {
			return r
		}
		st, err := LookupTurn(context.WithoutCancel(ctx), m.deps.Store, id, t.ID)
		switch {
		case err != nil:
			return TurnResult{SessionID: id, TurnID: t.ID, Err: err}
		case st.Completed:
			return TurnResult{SessionID: st.Session, TurnID: t.ID, Answer: st.Answer}
		case st.Started || t.Continue || attempt > 0 || ctx.Err() != nil:
			return TurnResult{SessionID: st.Session, TurnID: t.ID, Err: fmt.Errorf("session %s stopped during the turn: %w", id, agent.ErrInterrupted)}
		}
	}
}

// runTurn sends t to session id's actor once; gone says that the actor
// stopped without answering.
func (m *Manager) runTurn(ctx context.Context, id string, t *Turn) (TurnResult, bool) {
	e, done, err := m.use(ctx, id)
	if err != nil {
		return TurnResult{Err: err}, false
	}
	defer done()
	// Each send is a copy with its own Reply: a turn sent again (its
	// actor stopped under it) must not change the one an old actor may
	// still be answering.
	reply := make(chan TurnResult, 1)
	tc := *t
	tc.Reply = reply
	m.sys.Root.Send(e.pid, &tc)
	select {
	case r := <-reply:
		m.movedOn(e, r.SessionID)
		return r, false
	case <-e.gone:
	case <-ctx.Done():
		reason := "interrupted"
		if c := context.Cause(ctx); c != nil && c != context.Canceled {
			reason = c.Error()
		}
		m.sys.Root.Send(e.pid, &Stop{Reason: reason})
		select {
		case r := <-reply:
			m.movedOn(e, r.SessionID)
			return r, false
		case <-e.gone:
		}
	}
	select {
	case r := <-reply:
		m.movedOn(e, r.SessionID)
		return r, false
	default:
		return TurnResult{}, true
	}
}

// Stop interrupts session id's turn in flight.
func (m *Manager) Stop(id, reason string) {
	m.mu.Lock()
	e, ok := m.lookup(id)
	ok = ok && e.pid != nil
	m.mu.Unlock()
	if ok {
		m.sys.Root.Send(e.pid, &Stop{Reason: reason})
	}
}

// Steer hands text to session id's turn in flight as guidance (/steer);
// ErrNotRunning when the session runs no turn (or is not live here).
func (m *Manager) Steer(id, text string) error {
	m.mu.Lock()
	e, ok := m.lookup(id)
	ok = ok && e.pid != nil
	m.mu.Unlock()
	if !ok {
		return ErrNotRunning
	}
	reply := make(chan error, 1)
	m.sys.Root.Send(e.pid, &Steer{Text: text, Reply: reply})
	select {
	case err := <-reply:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("the session did not answer")
	}
}

// Shutdown stops every session actor, interrupting turns in flight.
func (m *Manager) Shutdown() {
	m.sys.Root.StopFuture(m.parent).Wait()
}

// Compress compresses session id now and returns the session the
// conversation continues in.
func (m *Manager) Compress(ctx context.Context, id, model string) (string, error) {
	return m.CompressNow(ctx, id, CompressNow{Model: model})
}

// CompressNow is Compress with every field of a CompressNow (Force); its
// Reply is set here.
func (m *Manager) CompressNow(ctx context.Context, id string, c CompressNow) (string, error) {
	e, done, err := m.use(ctx, id)
	if err != nil {
		return "", err
	}
	defer done()
	reply := make(chan TurnResult, 1)
	c.Reply = reply
	m.sys.Root.Send(e.pid, &c)
	select {
	case r := <-reply:
		m.movedOn(e, r.SessionID)
		return r.SessionID, r.Err
	case <-e.gone:
		select {
		case r := <-reply:
			return r.SessionID, r.Err
		default:
			return "", fmt.Errorf("session %s stopped before compressing: %w", id, agent.ErrInterrupted)
		}
	}
}

// Retitle records title as session id's title (the person's: a generated
// title arriving later does not replace it).
func (m *Manager) Retitle(ctx context.Context, id, title string) error {
	e, done, err := m.use(ctx, id)
	if err != nil {
		return err
	}
	defer done()
	reply := make(chan error, 1)
	m.sys.Root.Send(e.pid, &Retitle{Title: title, Reply: reply})
	select {
	case err := <-reply:
		return err
	case <-e.gone:
		select {
		case err := <-reply:
			return err
		default:
			return fmt.Errorf("session %s stopped before recording its title", id)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LeaseLost stops session id's actor because its store lease ended without
// being released (StoreLeases.OnLost): at once when it is idle, else once
// its turn in flight has ended — a turn whose model answer is in hand is
// not cut (its appends name the stream's exact revision, so they land only
// if no other process wrote the session meanwhile). New callers wait for
// the actor to stop and start it again, under a new lease. It returns once
// the actor has stopped.
func (m *Manager) LeaseLost(id string) {
	m.leave(id, func(e *entry) {
		m.sys.Root.Send(e.pid, &leaseLost{})
		<-e.gone
	})
}

// Restart stops session id's actor, giving its lease up, so that its next
// use recovers it from its stream again (after events were written by
// another process).
func (m *Manager) Restart(id string) {
	m.leave(id, func(e *entry) { m.sys.Root.StopFuture(e.pid).Wait() })
}

// leave marks session id's running actor as leaving (new callers wait for
// it to stop and start another) and has stop end it; an actor still
// starting is waited for first. Nothing is done when none runs.
func (m *Manager) leave(id string, stop func(*entry)) {
	for {
		m.mu.Lock()
		e, ok := m.lookup(id)
		if !ok {
			m.mu.Unlock()
			return
		}
		if e.pid == nil {
			m.mu.Unlock()
			<-e.started
			continue
		}
		e.leaving = true
		m.mu.Unlock()
		stop(e)
		return
	}
}
