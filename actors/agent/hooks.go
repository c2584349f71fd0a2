package agent

import (
	"context"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/projections/history"
)

// TurnHooks hear of a turn's start and end: Hermes' shell hooks
// (on_session_start, pre_llm_call, on_session_end) are one. They run
// with the turn's Env in ctx, so what they decide is recorded in the
// session's stream; they must not fail the turn.
type TurnHooks interface {
	// TurnStarted runs before the turn's first model call. What it
	// returns is added to the turn's user message on every model call of
	// the turn, and never recorded as part of the message.
	TurnStarted(ctx context.Context, t TurnStart) string
	// TurnEnded runs once the turn's outcome is recorded.
	TurnEnded(ctx context.Context, t TurnEnd)
}

// TurnStart describes a turn about to call the model.
type TurnStart struct {
	SessionID string
	TurnID    string
	Model     string
	// UserText is the turn's user message.
	UserText string
	// First is set on the first turn of a new session.
	First bool
}

// TurnEnd describes how a turn ended.
type TurnEnd struct {
	SessionID   string
	TurnID      string
	Model       string
	Completed   bool
	Interrupted bool
	Err         error
	// Answer is the turn's final answer (empty unless Completed).
	Answer string
}

// AnswerHooks may change a turn's final answer before it is recorded
// (transform_llm_output): TurnHooks that also implement it are asked.
// The answer recorded is the changed one, so the history, the screen and
// a replay all have what the hooks made of it.
type AnswerHooks interface {
	TransformAnswer(ctx context.Context, t TurnStart, answer string) string
}

// RequestHooks hear of every request made to the model's API
// (pre_api_request, post_api_request, api_request_error): TurnHooks that
// also implement it are told. They observe; they change nothing.
type RequestHooks interface {
	RequestStarting(ctx context.Context, r APIRequest)
	// RequestEnded gets the response, or the error the request ended with.
	RequestEnded(ctx context.Context, r APIRequest, resp model.Response, err error)
}

// APIRequest describes one request to the model's API.
type APIRequest struct {
	SessionID, TurnID string
	Model             string
	Provider, APIMode string
	// Attempt counts the requests of one model call from 0 (continuations
	// after an output limit are further requests).
	Attempt   int
	Messages  int
	Tools     int
	MaxTokens int
	// Chars is the size of the messages and system prompt sent.
	Chars   int
	Started time.Time
}

func apiRequest(ctx context.Context, p model.Provider, req model.Request, attempt int) APIRequest {
	env := tool.EnvFrom(ctx)
	r := APIRequest{SessionID: env.SessionID, TurnID: env.TurnID, Model: req.Model, Provider: p.Name(), APIMode: p.APIMode(), Attempt: attempt,
		Messages: len(req.Messages), MaxTokens: req.MaxTokens, Chars: len(req.System), Started: time.Now()}
	if !req.NoTools {
		r.Tools = len(req.Tools)
	}
	for _, m := range req.Messages {
		r.Chars += len(m.Content)
	}
	return r
}

// SubagentHooks hear of a subagent starting and stopping (subagent_start,
// subagent_stop): the session asks TurnHooks that also implement it.
type SubagentHooks interface {
	SubagentStarted(ctx context.Context, s Subagent)
	SubagentStopped(ctx context.Context, s Subagent)
}

// Subagent describes a subagent a turn delegated to.
type Subagent struct {
	ParentSessionID, ParentTurnID string
	ChildSessionID                string
	Goal                          string
	Depth                         int
	// Status, Summary and Duration are set when it stopped.
	Status   string
	Summary  string
	Duration time.Duration
}

// turnStart describes the turn of t about to start.
func turnStart(env tool.Env, cfg Config, t *history.Transcript) TurnStart {
	ts := TurnStart{SessionID: env.SessionID, TurnID: env.TurnID, Model: cfg.Model}
	users := 0
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if m := t.Messages[i]; m.Role == "user" {
			users++
			if ts.UserText == "" {
				ts.UserText = m.Content
			}
		}
	}
	ts.First = users == 1 && len(t.Messages) == 1
	return ts
}
