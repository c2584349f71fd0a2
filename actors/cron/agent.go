package cron

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// SessionAgent runs job prompts as fresh sessions through the session
// actors. Each run gets a session manager of its own whose dependencies
// are narrowed to the job: its toolsets, its cost cap, and nobody to ask
// (clarify fails and dangerous commands are denied unless allowed
// beforehand).
type SessionAgent struct {
	Sys  *actor.ActorSystem
	Deps session.Deps
	// Create writes the opening events of session id: source cron, the
	// system prompt.
	Create func(ctx context.Context, id string, job *Job) error
	// Tools returns a job's toolbox and what its subagents may get (see
	// session.Deps.Restrict); nil keeps Deps'.
	Tools func(job *Job) (tool.Toolbox, func([]string, bool) tool.Toolbox)
}

// Run implements Agent.
func (a *SessionAgent) Run(ctx context.Context, sessionID string, job *Job, prompt string) (string, float64, error) {
	if sessionID == "" {
		return "", 0, errors.New("the run has no session id")
	}
	deps := a.Deps
	deps.Asker = nil
	if a.Tools != nil {
		deps.Tools, deps.Restrict = a.Tools(job)
	}
	if c := job.Spec.MaxCostUSD; c > 0 && (deps.MaxCostPerSession == 0 || c < deps.MaxCostPerSession) {
		deps.MaxCostPerSession = c
	}
	if err := a.Create(ctx, sessionID, job); err != nil {
		return "", 0, err
	}
	mgr := session.NewManager(a.Sys, deps)
	defer mgr.Shutdown()
	res := mgr.RunTurn(ctx, sessionID, &session.Turn{Text: prompt, Model: job.Spec.Model})
	cost, err := SessionCost(context.WithoutCancel(ctx), deps.Store, sessionID)
	if res.Err == nil && err != nil {
		return res.Answer, cost, err
	}
	return res.Answer, cost, res.Err
}

// Close settles session id after the process running it died: its
// actor recovers it, recording the turn the crash cut short as
// interrupted, and stops.
func (a *SessionAgent) Close(ctx context.Context, id string) error {
	mgr := session.NewManager(a.Sys, a.Deps)
	defer mgr.Shutdown()
	_, err := mgr.Session(ctx, id)
	return err
}

// SessionCost is what session id cost: its model calls, auxiliary calls
// and subagents, through the sessions compression continued it in.
func SessionCost(ctx context.Context, store events.Store, id string) (float64, error) {
	total := 0.0
	for seen := map[string]bool{}; id != "" && !seen[id]; {
		seen[id] = true
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			return total, err
		}
		next := ""
		for _, r := range rs {
			switch r.Type {
			case schema.TypeAssistantMessageAdded, schema.TypeAuxiliaryCallCompleted, schema.TypeSubagentFinished, schema.TypeContextCompressed:
			default:
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return total, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
			}
			switch e := p.(type) {
			case schema.AssistantMessageAdded:
				total += e.CostUSD
			case schema.AuxiliaryCallCompleted:
				total += e.CostUSD
			case schema.SubagentFinished:
				total += e.CostUSD
			case schema.ContextCompressed:
				next = e.ChildSessionID
			}
		}
		id = next
	}
	return total, nil
}
