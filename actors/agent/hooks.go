package agent

import (
	"context"

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
