package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/actors/tool"
)

// Answers of an approval question (tool.QuestionApproval), as the terminal
// and MCP approvals read them.
const (
	answerOnce    = "once"
	answerSession = "session"
	answerAlways  = "always"
	answerDeny    = "deny"
)

// permissionOptions are the editor's options for each approval choice.
var permissionOptions = map[string]sdk.PermissionOption{
	answerOnce:    {OptionId: answerOnce, Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow once"},
	answerSession: {OptionId: answerSession, Kind: sdk.PermissionOptionKindAllowAlways, Name: "Allow for this session"},
	answerAlways:  {OptionId: answerAlways, Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always allow (saved to the allow-list)"},
	answerDeny:    {OptionId: answerDeny, Kind: sdk.PermissionOptionKindRejectOnce, Name: "Deny"},
}

// Ask implements tool.Asker: an approval becomes a session/request_permission
// about the tool call asking, and the option the editor's user picks is
// the answer (a cancelled request denies). The editor has no way to answer
// free-form questions, so clarify gets tool.ErrNoAsker.
func (a *Agent) Ask(ctx context.Context, q tool.Question) (string, error) {
	if q.Kind != tool.QuestionApproval {
		return "", tool.ErrNoAsker
	}
	s := a.asking(tool.EnvFrom(ctx).SessionID)
	conn := a.client()
	if s == nil || conn == nil {
		return "", tool.ErrNoAsker
	}
	a.mu.Lock()
	out := s.out
	a.mu.Unlock()
	if out != nil {
		out.flush() // the tool call goes out before the question about it
	}
	callID := callFrom(ctx)
	a.mu.Lock()
	info, known := s.calls[callID]
	if !known && len(s.calls) == 1 {
		for id, i := range s.calls {
			callID, info, known = id, i, true
		}
	}
	a.mu.Unlock()
	if callID == "" {
		callID = "approval"
	}
	upd := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(callID), Status: sdk.Ptr(sdk.ToolCallStatusPending),
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(q.Text))}}
	if known {
		upd.Title, upd.Kind, upd.RawInput, upd.Locations = sdk.Ptr(info.title), sdk.Ptr(info.kind), info.input, info.locations
	} else {
		upd.Title = sdk.Ptr("approval")
	}
	var opts []sdk.PermissionOption
	for _, c := range q.Choices {
		if o, ok := permissionOptions[c]; ok {
			opts = append(opts, o)
		}
	}
	if len(opts) == 0 {
		return "", fmt.Errorf("acp: approval with no choice the editor can offer (%v)", q.Choices)
	}
	resp, err := conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(s.id), ToolCall: upd, Options: opts})
	if err != nil {
		return "", fmt.Errorf("ask the editor: %w", err)
	}
	if sel := resp.Outcome.Selected; sel != nil {
		if _, ok := permissionOptions[string(sel.OptionId)]; ok {
			return string(sel.OptionId), nil
		}
	}
	return answerDeny, nil
}

// asking is the session a question comes from: its own, or, for a
// subagent's question (its own session id), the one session with a prompt
// in flight on this connection.
func (a *Agent) asking(id string) *state {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[id]; ok {
		return s
	}
	var only *state
	for _, s := range a.sessions {
		if s.out != nil {
			if only != nil {
				return nil
			}
			only = s
		}
	}
	return only
}

type callKey struct{}

// callFrom is the id of the tool call whose context ctx is (CallExecutor).
func callFrom(ctx context.Context) string {
	id, _ := ctx.Value(callKey{}).(string)
	return id
}

var _ tool.Asker = (*Agent)(nil)

// CallExecutor runs calls with Next, telling each call's context its id,
// so that a permission request names the tool call it is about.
type CallExecutor struct{ Next tool.Executor }

// Execute implements tool.Executor.
func (e CallExecutor) Execute(ctx context.Context, c tool.Call) tool.Result {
	return e.Next.Execute(context.WithValue(ctx, callKey{}, c.ID), c)
}
