// Package toolrun runs tool calls as actors: one short-lived ToolRunner
// actor per call, supervised by a guardian whose strategy turns a
// panicking tool into an error result instead of a dead session, with a
// bound on how many run at once and a timeout per call.
package toolrun

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
)

// Pool is an tool.Executor backed by ToolRunner actors.
type Pool struct {
	system  *actor.ActorSystem
	runner  *actor.Props // one call's runner, under the pool's guardian
	slots   chan struct{}
	timeout time.Duration

	// Log is where ToolRunners report a message they do not handle; the
	// zero Logger discards. Set it before the first Execute.
	Log zerolog.Logger
}

// NewPool returns a pool that runs at most concurrency calls at once, each
// cut at timeout.
func NewPool(system *actor.ActorSystem, concurrency int, timeout time.Duration) *Pool {
	if concurrency < 1 {
		concurrency = 1
	}
	p := &Pool{system: system, slots: make(chan struct{}, concurrency), timeout: timeout}
	// The runners' supervisor is a guardian (a supervisor without an
	// actor of its own): a call costs one actor, not a parent and a
	// child, and its failure still reaches panicToResult.
	p.runner = actor.PropsFromProducer(func() actor.Actor { return &runner{log: p.Log} },
		actor.WithGuardian(panicToResult{}))
	return p
}

// runner is the ToolRunner actor: it runs its one call and stops.
type runner struct {
	log zerolog.Logger
}

func (r *runner) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *run:
		r.run(c, m)
	case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		r.log.Warn().Str("message_type", fmt.Sprintf("%T", m)).Msg("tool runner: message not handled")
	}
}

// run runs the call of m, answers it and stops the runner.
func (r *runner) run(c actor.Context, m *run) {
	ctx := m.ctx
	if m.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	ctx, span := startToolSpan(ctx, m.call)
	// The tool runs in this actor's Receive: a panic here fails the actor
	// and reaches the supervisor strategy below.
	out, err := m.call.Tool.Run(ctx, m.call.Args)
	res := tool.Result{Content: out, Duration: time.Since(m.start)}
	defer endToolSpan(ctx, span, m.call, &res)
	if err != nil {
		res.Err = err.Error()
		if ctx.Err() == context.DeadlineExceeded {
			res.Err = fmt.Sprintf("tool %s timed out after %s", m.call.Name, m.timeout)
		} else if m.ctx.Err() != nil {
			res.Interrupted = true
		}
	}
	m.reply <- res
	c.Stop(c.Self())
}

// panicToResult is the supervisor strategy of ToolRunners: the failed call
// is answered with an error result and the runner stopped; nothing is
// restarted, since a tool call is not retried behind the model's back.
type panicToResult struct{}

func (panicToResult) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, message interface{}) {
	if m, ok := message.(*run); ok {
		select {
		case m.reply <- tool.Result{Err: fmt.Sprintf("tool %s panicked: %v", m.call.Name, reason), Duration: time.Since(m.start)}:
		default:
		}
	}
	sup.StopChildren(child)
}

// Execute implements tool.Executor.
func (p *Pool) Execute(ctx context.Context, c tool.Call) tool.Result {
	start := time.Now()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return tool.Result{Interrupted: true, Err: "cancelled before it started"}
	}
	defer func() { <-p.slots }()
	// The runner stops itself once it has answered; stopping it here as
	// well ends one abandoned past its deadline.
	r := p.system.Root.Spawn(p.runner)
	defer p.system.Root.Stop(r)
	m := &run{ctx: ctx, call: c, timeout: p.timeout, reply: make(chan tool.Result, 1), start: start}
	p.system.Root.Send(r, m)
	var deadline <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout + 2*time.Second)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case r := <-m.reply:
		return r
	case <-deadline:
		// The tool ignored its context: abandon it.
		return tool.Result{Err: fmt.Sprintf("tool %s timed out after %s", c.Name, p.timeout), Duration: time.Since(start)}
	case <-ctx.Done():
		select {
		case r := <-m.reply:
			return r
		case <-time.After(15 * time.Second):
			return tool.Result{Interrupted: true, Err: "cancelled", Duration: time.Since(start)}
		}
	}
}
