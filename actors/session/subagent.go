package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Delegation limits, Hermes' defaults.
const (
	DefaultMaxDepth      = 2
	DefaultMaxConcurrent = 3
)

// childTask is what a subagent is for; it outlives restarts of the child
// actor (the props' producer hands it to every new incarnation).
type childTask struct {
	goal   string
	depth  int
	budget *tool.Budget
	tools  tool.Toolbox
	reply  chan tool.DelegateResult
	once   sync.Once
	// observe and yolo come from the delegating turn: its observer sees
	// what the subagent does (one level deeper), and /yolo holds for it.
	observe agent.Observer
	yolo    bool
}

func (t *childTask) finish(r tool.DelegateResult) {
	t.once.Do(func() { t.reply <- r })
}

// childStrategy supervises a session's subagents one-for-one: a failed
// child is restarted (it recovers from its own stream) up to max times
// within window; past that the failure escalates to the parent as the
// delegate_task's error result.
type childStrategy struct {
	max    int
	window time.Duration
	mu     sync.Mutex
	tasks  map[string]*childTask
}

func newChildStrategy(max int, window time.Duration) *childStrategy {
	if max <= 0 {
		max = 3
	}
	if window <= 0 {
		window = time.Minute
	}
	return &childStrategy{max: max, window: window, tasks: map[string]*childTask{}}
}

func (s *childStrategy) register(id string, t *childTask) {
	s.mu.Lock()
	s.tasks[id] = t
	s.mu.Unlock()
}

func (s *childStrategy) unregister(id string) {
	s.mu.Lock()
	delete(s.tasks, id)
	s.mu.Unlock()
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *childStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason interface{}, _ interface{}) {
	rs.Fail()
	if rs.NumberOfFailures(s.window) <= s.max {
		sup.RestartChildren(child)
		return
	}
	s.mu.Lock()
	t := s.tasks[child.Id]
	s.mu.Unlock()
	if t != nil {
		t.finish(tool.DelegateResult{Status: "failed", Answer: fmt.Sprintf("the subagent failed %d times and was given up: %v", rs.FailureCount(), reason)})
	}
	sup.StopChildren(child)
}

// delegator is the Delegator a turn's tools use: it creates the child's
// stream, has the session actor spawn it under its supervision, and waits.
type delegator struct {
	a       *Actor
	self    *actor.PID
	root    *actor.RootContext
	turnID  string
	observe agent.Observer
}

func (d *delegator) Delegate(ctx context.Context, req tool.DelegateRequest) (tool.DelegateResult, error) {
	a := d.a
	maxDepth := a.deps.MaxDepth
	if maxDepth == 0 {
		maxDepth = DefaultMaxDepth
	}
	env := tool.EnvFrom(ctx)
	if a.depth >= maxDepth {
		return tool.DelegateResult{}, fmt.Errorf("delegation depth limit reached (delegation.max_depth = %d): do this part yourself", maxDepth)
	}
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return tool.DelegateResult{}, ctx.Err()
	}
	defer func() { <-a.slots }()

	childID := uuid.NewString()
	parentID := a.rec.sessionID()
	start := a.started
	start.Reason, start.ParentSessionID, start.ParentTurnID, start.Goal, start.History = schema.StartSubagent, parentID, d.turnID, req.Goal, nil
	system := a.tr.System + "\n\n## You are a subagent\nAnother agent delegated one task to you. Do it with your tools and end with a concise report of what you did and found: your final answer is all the other agent will see."
	meta := schema.Meta{SessionID: childID, TurnID: d.turnID}
	e1, err := schema.NewEnvelope(meta, start)
	if err != nil {
		return tool.DelegateResult{}, err
	}
	meta.CausationID = e1.ID
	e2, err := schema.NewEnvelope(meta, schema.SystemPromptBuilt{Content: system})
	if err != nil {
		return tool.DelegateResult{}, err
	}
	if _, err := a.deps.Store.Append(context.WithoutCancel(ctx), events.SessionStream(childID), events.NoStream, e1, e2); err != nil {
		return tool.DelegateResult{}, err
	}
	if env.Record != nil {
		if err := env.Record(ctx, schema.SubagentSpawned{ChildSessionID: childID, Goal: req.Goal, Toolsets: req.Toolsets, Depth: a.depth + 1}); err != nil {
			return tool.DelegateResult{}, err
		}
	}
	sh, _ := a.deps.Hooks.(agent.SubagentHooks)
	sub := agent.Subagent{ParentSessionID: parentID, ParentTurnID: d.turnID, ChildSessionID: childID, Goal: req.Goal, Depth: a.depth + 1}
	began := time.Now()
	if sh != nil {
		sh.SubagentStarted(ctx, sub)
	}
	tools := a.deps.Tools
	if a.deps.Restrict != nil {
		tools = a.deps.Restrict(req.Toolsets, a.depth+1 < maxDepth)
	}
	goal := req.Goal
	if req.Context != "" {
		goal += "\n\nContext:\n" + req.Context
	}
	task := &childTask{goal: goal, depth: a.depth + 1, budget: env.Budget, tools: tools, reply: make(chan tool.DelegateResult, 1), yolo: env.Yolo}
	if parent := d.observe; parent != nil {
		task.observe = func(o agent.Observation) {
			o.Depth++
			parent(o)
		}
	}
	spawned := make(chan error, 1)
	d.root.Send(d.self, &spawnChild{id: childID, task: task, reply: spawned})
	if err := <-spawned; err != nil {
		return tool.DelegateResult{}, fmt.Errorf("start subagent: %w", err)
	}
	var res tool.DelegateResult
	select {
	case res = <-task.reply:
	case <-ctx.Done():
		// The parent's turn stops: the child stops too, recorded.
		d.root.Send(d.self, &stopChild{id: childID})
		select {
		case res = <-task.reply:
		case <-time.After(30 * time.Second):
			res = tool.DelegateResult{Status: "interrupted"}
		}
	}
	res.SessionID = childID
	if sh != nil {
		sub.Status, sub.Summary, sub.Duration = res.Status, clipString(res.Answer, 500), time.Since(began)
		sh.SubagentStopped(context.WithoutCancel(ctx), sub)
	}
	if env.Record != nil {
		if err := env.Record(ctx, schema.SubagentFinished{ChildSessionID: childID, Status: res.Status, Summary: clipString(res.Answer, 500),
			Usage: res.Usage, CostUSD: res.Cost}); err != nil {
			return res, err
		}
	}
	if res.Status == "failed" {
		return res, errors.New(res.Answer)
	}
	return res, nil
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// childProps are the props of a subagent's actor.
func childProps(id string, deps Deps, task *childTask) *actor.Props {
	strategy := newChildStrategy(deps.ChildRestarts, deps.ChildWindow)
	own := newOwnership(deps.Leases, nil)
	return actor.PropsFromProducer(func() actor.Actor {
		return &Actor{id: id, deps: deps, log: deps.Log.With().Str("session", id).Int("depth", task.depth).Logger(), task: task,
			depth: task.depth, strategy: strategy, own: own}
	}, actor.WithSupervisor(strategy))
}

// usageOf totals a stream's usage and cost.
func (a *Actor) usageSoFar(ctx context.Context) (schema.Usage, float64) {
	rs, err := a.deps.Store.ReadStream(ctx, events.SessionStream(a.rec.sessionID()), events.Forward, 0, 0)
	if err != nil {
		return schema.Usage{}, 0
	}
	var u schema.Usage
	var cost float64
	for _, r := range rs {
		if r.Type != schema.TypeAssistantMessageAdded {
			continue
		}
		if p, err := schema.Decode(r.Envelope); err == nil {
			m := p.(schema.AssistantMessageAdded)
			u, cost = u.Add(m.Usage), cost+m.CostUSD
		}
	}
	return u, cost
}
