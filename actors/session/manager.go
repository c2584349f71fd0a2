package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/events"
)

// Manager spawns session actors on demand under one supervisor, which
// restarts a failed session (it recovers from its stream) a bounded number
// of times.
type Manager struct {
	sys    *actor.ActorSystem
	deps   Deps
	parent *actor.PID
	mu     sync.Mutex
	pids   map[string]*actor.PID
}

// NewManager starts the sessions supervisor.
func NewManager(sys *actor.ActorSystem, deps Deps) *Manager {
	if deps.AuxCooldown == nil {
		deps.AuxCooldown = &compress.Cooldown{}
	}
	m := &Manager{sys: sys, deps: deps, pids: map[string]*actor.PID{}}
	strategy := actor.NewOneForOneStrategy(3, 10*time.Second, actor.DefaultDecider)
	m.parent = sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch s := c.Message().(type) {
		case *spawn:
			pid, err := c.SpawnNamed(props(s.id, deps, s.ready), s.id)
			if err != nil {
				c.Respond(err)
				return
			}
			c.Respond(pid)
		case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
			// Lifecycle messages protoactor delivers that need nothing here.
		default:
			deps.Log.Warn().Str("message_type", fmt.Sprintf("%T", s)).Msg("sessions supervisor: message not handled")
		}
	}, actor.WithSupervisor(strategy)))
	return m
}

// Session returns the actor of session id, spawning it (and so leasing and
// recovering it from its stream) on first use. A session another live
// process runs is refused with an *InUseError.
func (m *Manager) Session(ctx context.Context, id string) (*actor.PID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pid, ok := m.pids[id]; ok {
		return pid, nil
	}
	rs, err := m.deps.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no session %s", id)
	}
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
		m.pids[id] = v
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

// RunTurn is Run with every field of a Turn; its Reply is set here.
func (m *Manager) RunTurn(ctx context.Context, id string, t *Turn) TurnResult {
	pid, err := m.Session(ctx, id)
	if err != nil {
		return TurnResult{Err: err}
	}
	reply := make(chan TurnResult, 1)
	t.Reply = reply
	m.sys.Root.Send(pid, t)
	select {
	case r := <-reply:
		return r
	case <-ctx.Done():
		reason := "interrupted"
		if c := context.Cause(ctx); c != nil && c != context.Canceled {
			reason = c.Error()
		}
		m.sys.Root.Send(pid, &Stop{Reason: reason})
		return <-reply
	}
}

// Stop interrupts session id's turn in flight.
func (m *Manager) Stop(id, reason string) {
	m.mu.Lock()
	pid, ok := m.pids[id]
	m.mu.Unlock()
	if ok {
		m.sys.Root.Send(pid, &Stop{Reason: reason})
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
	pid, err := m.Session(ctx, id)
	if err != nil {
		return "", err
	}
	reply := make(chan TurnResult, 1)
	c.Reply = reply
	m.sys.Root.Send(pid, &c)
	r := <-reply
	return r.SessionID, r.Err
}

// Retitle records title as session id's title (the person's: a generated
// title arriving later does not replace it).
func (m *Manager) Retitle(ctx context.Context, id, title string) error {
	pid, err := m.Session(ctx, id)
	if err != nil {
		return err
	}
	reply := make(chan error, 1)
	m.sys.Root.Send(pid, &Retitle{Title: title, Reply: reply})
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart stops session id's actor, giving its lease up, so that its next
// use recovers it from its stream again (after events were written by
// another process).
func (m *Manager) Restart(id string) {
	m.mu.Lock()
	pid, ok := m.pids[id]
	delete(m.pids, id)
	m.mu.Unlock()
	if ok {
		m.sys.Root.StopFuture(pid).Wait()
	}
}
