package tool

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// Question is something a tool asks the person: a clarification, or the
// approval of a dangerous command.
type Question struct {
	// Kind is QuestionClarify or QuestionApproval.
	Kind    string
	Text    string
	Choices []string
	// Timeout bounds the wait; the caller decides what silence means.
	Timeout time.Duration
}

// Kinds of Question.
const (
	// QuestionClarify asks the person to choose or say what they mean.
	QuestionClarify = "clarify"
	// QuestionApproval asks the person to allow a dangerous action; the
	// answers are the approval choices (once, session, always, deny).
	QuestionApproval = "approval"
)

// Asker reaches the person: the CLI prompts on the terminal, the gateway
// sends a message.
type Asker interface {
	Ask(ctx context.Context, q Question) (string, error)
}

// ErrNoAsker is returned when a tool needs a person and none is reachable.
var ErrNoAsker = errors.New("no one to ask: this session is not interactive")

// Env is what a tool call may know of its session.
type Env struct {
	SessionID  string
	TurnID     string
	WorkingDir string
	// Record appends events to the session's stream.
	Record func(ctx context.Context, ps ...schema.Payload) error
	Asker  Asker
	// Yolo approves dangerous commands that are not hard-line.
	Yolo bool
	// Values holds per-session state tools keep between calls (approved
	// patterns, background processes); keyed by the tool that owns it.
	Values *SessionValues
	// Delegate runs subagents (nil: delegation is not available here).
	Delegate Delegator
	// Depth is 0 for a session a person started, 1 for its subagents...
	Depth int
	// Budget is the iteration budget of the turn, shared with subagents.
	Budget *Budget
	// ReviewOf and ReviewOfTurn are set in a background review (whose
	// session is SessionID): the session and turn it reviews. What its
	// tools write is the review's (a skill's author is the review).
	ReviewOf     string
	ReviewOfTurn string
}

// DelegateRequest asks for a subagent.
type DelegateRequest struct {
	Goal     string
	Context  string
	Toolsets []string
}

// DelegateResult is how a subagent ended.
type DelegateResult struct {
	SessionID string
	// Status is completed, budget_exhausted, interrupted or failed.
	Status string
	Answer string
	Usage  schema.Usage
	Cost   float64
}

// Delegator runs a subagent to completion: the session actor implements
// it by spawning a child session actor under its supervision.
type Delegator interface {
	Delegate(ctx context.Context, req DelegateRequest) (DelegateResult, error)
}

type envKey struct{}

// WithEnv attaches env to ctx.
func WithEnv(ctx context.Context, env *Env) context.Context {
	return context.WithValue(ctx, envKey{}, env)
}

// EnvFrom returns the Env of a tool call; never nil.
func EnvFrom(ctx context.Context) *Env {
	if e, ok := ctx.Value(envKey{}).(*Env); ok && e != nil {
		return e
	}
	return &Env{Values: NewSessionValues()}
}
