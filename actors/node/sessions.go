package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
)

// stopGrace bounds how long an interrupted turn's caller waits for the
// grain to record the interruption and answer.
const stopGrace = 30 * time.Second

// Sessions runs turns on the cluster's session grains: it implements the
// gateway's Sessions port. A turn's observations (streamed deltas, tool
// starts and ends) cross the cluster: the caller hosts an actor that the
// grain sends them to, in order, and hands them to the turn's Observer.
type Sessions struct {
	c *Cluster
	// OnAnswer, when set, is told which member answered each turn (tests,
	// diagnostics).
	OnAnswer func(session, node string)
	// OnPending, when set, is told which member answered "pending" (the
	// turn runs, or another process still holds the session).
	OnPending func(session, node string)
	// Asker, when set, answers the questions a turn asks the person
	// (clarify, approvals) wherever the turn runs: the gateway's asker,
	// which asks in the chat.
	Asker tool.Asker
	// Store, when set, is the log the members write. While a turn's grain
	// answers only "pending" or cannot be reached, RunTurn also looks the
	// turn up there (every StoreCheck): a turn recorded completed is
	// answered from its events, so its answer reaches the caller even when
	// the member's reply is lost (a store restart, a member stuck after
	// writing it). A turn its member answers with an error is looked up
	// there too, once: a completed one is answered, not failed.
	Store events.Store
}

// StoreCheck is how often RunTurn looks a turn it waits for up in the
// store (Sessions.Store).
const StoreCheck = 2 * time.Second

// NewSessions returns the session port of cluster c.
func NewSessions(c *Cluster) *Sessions { return &Sessions{c: c} }

// call sends req to session id's grain once.
func (s *Sessions) call(id string, req request, timeout time.Duration) (reply, error) {
	res, err := s.c.c.Request(id, Kind, encode(req), cluster.WithTimeout(timeout), cluster.WithRetryCount(3))
	if err != nil {
		return reply{}, err
	}
	b, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return reply{}, fmt.Errorf("session grain %s answered %T", id, res)
	}
	var rep reply
	if err := json.Unmarshal(b.Value, &rep); err != nil {
		return reply{}, fmt.Errorf("session grain %s: %w", id, err)
	}
	return rep, nil
}

// RunTurn runs t in session id on the member that owns it and waits for its
// outcome. The request is repeated (same turn id) until a grain answers, so
// a member that dies mid-turn is replaced by the one that owns the session
// next, which recovers the turn from the session's events. When ctx ends,
// the turn is stopped and RunTurn waits (boundedly) for its outcome.
func (s *Sessions) RunTurn(ctx context.Context, id string, t *session.Turn) session.TurnResult {
	req := request{Op: "turn", ID: t.ID, Text: t.Text, Images: t.Images, Model: t.Model, Continue: t.Continue, New: t.New, Trace: injectTrace(t.Trace)}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	asker := s.Asker
	if t.Yolo {
		// Approvals are granted here, by the caller who may grant them,
		// never by a flag the member would have to trust.
		asker = yoloAsker{next: s.Asker}
	}
	if t.Observe != nil || asker != nil {
		pid := s.caller(t.Observe, asker)
		// Poisoned, not stopped: a poison pill is queued after the
		// observations already delivered, which are handed over first.
		defer func() { _ = s.c.c.ActorSystem.Root.PoisonFuture(pid).Wait() }()
		req.Caller, req.Observe = &pidRef{Address: pid.Address, ID: pid.Id}, t.Observe != nil
	}
	var stopped time.Time
	// reached: some grain answered this turn's request; until one has,
	// a stopped turn has nothing to wait for.
	reached := false
	backoff := 100 * time.Millisecond
	checked := time.Now()
	// recorded answers a turn the store shows completed.
	recorded := func() (session.TurnResult, bool) {
		if s.Store == nil || time.Since(checked) < StoreCheck {
			return session.TurnResult{}, false
		}
		checked = time.Now()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		st, err := lookupTurn(lctx, s.Store, id, req.ID)
		if err != nil || !st.Completed {
			return session.TurnResult{}, false
		}
		s.c.log.Info().Str("session", id).Str("turn", req.ID).Msg("turn answered from the store: its member's reply did not come")
		return session.TurnResult{SessionID: st.Session, TurnID: req.ID, Answer: st.Answer}, true
	}
	for {
		if ctx.Err() != nil && stopped.IsZero() {
			reason := "interrupted"
			if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
				reason = c.Error()
			}
			s.Stop(id, reason)
			stopped = time.Now()
			req.Stopped = true
		}
		if !stopped.IsZero() && (!reached || time.Since(stopped) > stopGrace) {
			return session.TurnResult{SessionID: id, TurnID: req.ID, Err: fmt.Errorf("turn %s in session %s: %w", req.ID, id, context.Cause(ctx))}
		}
		rep, err := s.call(id, req, s.c.cfg.Poll+3*time.Second)
		if err != nil {
			if res, ok := recorded(); ok {
				return res
			}
			s.c.log.Warn().Err(err).Str("session", id).Str("turn", req.ID).Msg("session grain unreachable: asking again")
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		reached = true
		if rep.Pending {
			if s.OnPending != nil {
				s.OnPending(id, rep.Node)
			}
			if res, ok := recorded(); ok {
				return res
			}
			continue
		}
		if s.OnAnswer != nil {
			s.OnAnswer(id, rep.Node)
		}
		res := session.TurnResult{SessionID: rep.Session, TurnID: rep.Turn, Answer: rep.Answer, Usage: rep.Usage}
		switch {
		case rep.Interrupted:
			res.Err = fmt.Errorf("%s (on %s): %w", rep.Err, rep.Node, agent.ErrInterrupted)
		case rep.Err != "":
			if st, ok := s.completedInStore(ctx, id, req.ID); ok {
				// The member's last append committed though it heard an
				// error (the connection broke before the server's
				// answer, as when the store crashes): the turn is done.
				s.c.log.Info().Str("session", id).Str("turn", req.ID).Str("error", rep.Err).Msg("turn answered from the store: its member reported an error, but it completed")
				return st
			}
			res.Err = errors.New(rep.Err)
		}
		return res
	}
}

// failedLookup bounds how long RunTurn looks a turn its member reported
// failed up in the store, which may itself be restarting.
const failedLookup = 10 * time.Second

// completedInStore answers turn tid of session id from the store when the
// store shows it completed. A store that cannot be read is asked again
// (for failedLookup at most): the error being answered may have come from
// it restarting.
func (s *Sessions) completedInStore(ctx context.Context, id, tid string) (session.TurnResult, bool) {
	if s.Store == nil {
		return session.TurnResult{}, false
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedLookup)
	defer cancel()
	for {
		st, err := lookupTurn(lctx, s.Store, id, tid)
		if err == nil {
			if !st.Completed {
				return session.TurnResult{}, false
			}
			return session.TurnResult{SessionID: st.Session, TurnID: tid, Answer: st.Answer}, true
		}
		select {
		case <-lctx.Done():
			s.c.log.Warn().Err(err).Str("session", id).Str("turn", tid).Msg("look a failed turn up in the store")
			return session.TurnResult{}, false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop interrupts session id's turn in flight (best effort): through its
// grain, and on every member, since a turn goes on on the member it
// started on after a join moved its session elsewhere.
func (s *Sessions) Stop(id, reason string) {
	msg := encode(request{Op: "stop", ID: id, Reason: reason})
	for _, m := range s.c.Members() {
		s.c.c.ActorSystem.Root.Send(actor.NewPID(m, stopperName), msg)
	}
	if _, err := s.call(id, request{Op: "stop", Reason: reason}, 5*time.Second); err != nil {
		s.c.log.Warn().Err(err).Str("session", id).Msg("stop a session's turn")
	}
}

// Compress compresses session id now and returns the session the
// conversation continues in.
func (s *Sessions) Compress(ctx context.Context, id, model string) (string, error) {
	timeout := 5 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	rep, err := s.call(id, request{Op: "compress", Model: model}, timeout)
	if err != nil {
		return "", err
	}
	if rep.Err != "" {
		return rep.Session, errors.New(rep.Err)
	}
	return rep.Session, nil
}

// caller spawns the turn's caller actor: it hands the observations the
// grain running the turn sends to observe, in the order they arrive, and
// answers the turn's questions to the person through s.Asker.
func (s *Sessions) caller(observe agent.Observer, asker tool.Asker) *actor.PID {
	return s.c.c.ActorSystem.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		var b *wrapperspb.BytesValue
		switch msg := c.Message().(type) {
		case *wrapperspb.BytesValue:
			b = msg
		case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
			// Lifecycle messages protoactor delivers that need nothing here.
			return
		default:
			s.c.log.Warn().Str("message_type", fmt.Sprintf("%T", msg)).Msg("turn caller: message not handled")
			return
		}
		var m callerMsg
		if json.Unmarshal(b.Value, &m) != nil {
			return
		}
		switch {
		case m.Obs != nil && observe != nil:
			observe(*m.Obs)
		case m.Ask != nil && c.Sender() != nil:
			q, _ := json.Marshal(m.Ask)
			go answerQuestion(asker, c.ActorSystem().Root, c.Sender(), q)
		}
	}))
}

// yoloAsker answers a turn's approvals "once" for a caller that runs the
// turn with approvals skipped, and hands its other questions (clarify) to
// next. Hard-line refusals are never asked, so never approved.
type yoloAsker struct{ next tool.Asker }

func (y yoloAsker) Ask(ctx context.Context, q tool.Question) (string, error) {
	if q.Kind == tool.QuestionApproval {
		return "once", nil
	}
	if y.next == nil {
		return "", tool.ErrNoAsker
	}
	return y.next.Ask(ctx, q)
}
