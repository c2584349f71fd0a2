package hooks

import (
	"context"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// The runner is the turn loop's and the session's hooks.
var (
	_ agent.TurnHooks     = (*Runner)(nil)
	_ agent.AnswerHooks   = (*Runner)(nil)
	_ agent.RequestHooks  = (*Runner)(nil)
	_ agent.SubagentHooks = (*Runner)(nil)
)

func (r *Runner) cwd(ctx context.Context) string {
	return first(r.opts.Dir, tool.EnvFrom(ctx).WorkingDir)
}

// fire runs every hook of event with extra as the payload's extra.
func (r *Runner) fire(ctx context.Context, event, session string, extra map[string]any) []answer {
	var out []answer
	for _, h := range r.at(event, "") {
		e := make(map[string]any, len(extra))
		for k, v := range extra {
			e[k] = v
		}
		out = append(out, r.run(ctx, event, h, payload{SessionID: session, Cwd: r.cwd(ctx), Extra: e}, ""))
	}
	return out
}

// TurnStarted runs on_session_start on a session's first turn, then the
// pre_llm_call hooks, whose contexts it returns (agent.TurnHooks).
func (r *Runner) TurnStarted(ctx context.Context, t agent.TurnStart) string {
	if r == nil {
		return ""
	}
	if t.First {
		r.fire(ctx, OnSessionStart, t.SessionID, map[string]any{"model": t.Model, "platform": r.opts.Platform})
	}
	var parts []string
	for _, a := range r.fire(ctx, PreLLMCall, t.SessionID, map[string]any{"turn_id": t.TurnID, "task_id": "", "user_message": t.UserText,
		"is_first_turn": t.First, "model": t.Model, "platform": r.opts.Platform, "sender_id": ""}) {
		if a.context != "" {
			parts = append(parts, a.context)
		}
	}
	return strings.Join(parts, "\n\n")
}

// TransformAnswer runs the transform_llm_output hooks on a turn's final
// answer: the first replacement wins (agent.AnswerHooks).
func (r *Runner) TransformAnswer(ctx context.Context, t agent.TurnStart, text string) string {
	if r == nil || text == "" {
		return text
	}
	for _, h := range r.at(TransformLLMOutput, "") {
		a := r.run(ctx, TransformLLMOutput, h, payload{SessionID: t.SessionID, Cwd: r.cwd(ctx), Extra: map[string]any{
			"response_text": text, "model": t.Model, "platform": r.opts.Platform, "turn_id": t.TurnID}}, text)
		if a.replaced && a.replace != "" {
			return a.replace
		}
	}
	return text
}

// TurnEnded runs post_llm_call when the turn answered, then on_session_end:
// Hermes runs it at the end of every turn, saying whether it completed
// (agent.TurnHooks).
func (r *Runner) TurnEnded(ctx context.Context, t agent.TurnEnd) {
	if r == nil {
		return
	}
	if t.Completed && t.Answer != "" && !t.Interrupted {
		r.fire(ctx, PostLLMCall, t.SessionID, map[string]any{"turn_id": t.TurnID, "task_id": "", "assistant_response": t.Answer,
			"model": t.Model, "platform": r.opts.Platform})
	}
	r.fire(ctx, OnSessionEnd, t.SessionID, map[string]any{"turn_id": t.TurnID, "task_id": "", "completed": t.Completed,
		"interrupted": t.Interrupted, "model": t.Model, "platform": r.opts.Platform})
}

func (r *Runner) apiExtra(q agent.APIRequest) map[string]any {
	return map[string]any{"turn_id": q.TurnID, "task_id": "", "platform": r.opts.Platform, "model": q.Model, "provider": q.Provider,
		"api_mode": q.APIMode, "api_call_count": q.Attempt + 1, "message_count": q.Messages, "tool_count": q.Tools,
		"approx_input_tokens": (q.Chars + 3) / 4, "request_char_count": q.Chars, "max_tokens": q.MaxTokens,
		"started_at": float64(q.Started.UnixMilli()) / 1000}
}

// RequestStarting runs pre_api_request (agent.RequestHooks).
func (r *Runner) RequestStarting(ctx context.Context, q agent.APIRequest) {
	if r.Has(PreAPIRequest) {
		r.fire(ctx, PreAPIRequest, q.SessionID, r.apiExtra(q))
	}
}

// RequestEnded runs post_api_request, or api_request_error when the
// request failed (agent.RequestHooks).
func (r *Runner) RequestEnded(ctx context.Context, q agent.APIRequest, resp model.Response, err error) {
	event := PostAPIRequest
	if err != nil {
		event = APIRequestError
	}
	if !r.Has(event) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	ended := time.Now()
	extra := r.apiExtra(q)
	extra["api_duration"] = ended.Sub(q.Started).Seconds()
	extra["ended_at"] = float64(ended.UnixMilli()) / 1000
	if err != nil {
		extra["error"] = err.Error()
	} else {
		extra["finish_reason"] = resp.FinishReason
		extra["response_model"] = resp.Model
		extra["usage"] = map[string]any{"input_tokens": resp.Usage.PromptTokens, "output_tokens": resp.Usage.CompletionTokens}
		extra["assistant_content_chars"] = len(resp.Content)
		extra["assistant_tool_call_count"] = len(resp.ToolCalls)
	}
	r.fire(ctx, event, q.SessionID, extra)
}

// SubagentStarted runs subagent_start (agent.SubagentHooks).
func (r *Runner) SubagentStarted(ctx context.Context, s agent.Subagent) {
	if r.Has(SubagentStart) {
		r.fire(ctx, SubagentStart, s.ParentSessionID, map[string]any{"parent_session_id": s.ParentSessionID, "parent_turn_id": s.ParentTurnID,
			"child_session_id": s.ChildSessionID, "child_goal": s.Goal, "child_depth": s.Depth, "child_role": nil})
	}
}

// SubagentStopped runs subagent_stop (agent.SubagentHooks).
func (r *Runner) SubagentStopped(ctx context.Context, s agent.Subagent) {
	if r.Has(SubagentStop) {
		r.fire(ctx, SubagentStop, s.ParentSessionID, map[string]any{"parent_session_id": s.ParentSessionID, "parent_turn_id": s.ParentTurnID,
			"child_session_id": s.ChildSessionID, "child_role": nil, "child_summary": s.Summary, "child_status": s.Status,
			"duration_ms": s.Duration.Milliseconds()})
	}
}

// SessionFinalized runs on_session_finalize: the session is left (the
// chat exits, or /new moves on from it). reason is shutdown or new.
func (r *Runner) SessionFinalized(ctx context.Context, session, reason string) {
	if r.Has(OnSessionFinalize) && session != "" {
		r.fire(ctx, OnSessionFinalize, session, map[string]any{"platform": r.opts.Platform, "reason": reason})
	}
}

// SessionReset runs on_session_reset: /new started session after old.
func (r *Runner) SessionReset(ctx context.Context, old, session string) {
	if r.Has(OnSessionReset) {
		r.fire(ctx, OnSessionReset, session, map[string]any{"platform": r.opts.Platform, "previous_session_id": old})
	}
}

// Asker returns a with pre_approval_request and post_approval_response
// around every approval question (a dangerous command, an MCP tool that
// asks first): observers, as upstream, they cannot answer for the person.
// a itself when no such hook runs, nil when a is nil.
func (r *Runner) Asker(a tool.Asker) tool.Asker {
	if a == nil || !(r.Has(PreApprovalRequest) || r.Has(PostApprovalResponse)) {
		return a
	}
	return &asker{Asker: a, r: r}
}

type asker struct {
	tool.Asker
	r *Runner
}

// MirrorTerminal passes the live view of a command on to the asker
// wrapped (an editor's terminal): the hooks are about approvals only.
func (a *asker) MirrorTerminal(ctx context.Context, command, dir string) (tool.MirroredTerminal, error) {
	if m, ok := a.Asker.(tool.TerminalMirror); ok {
		return m.MirrorTerminal(ctx, command, dir)
	}
	return nil, nil
}

func (a *asker) Ask(ctx context.Context, q tool.Question) (string, error) {
	if q.Kind != tool.QuestionApproval {
		return a.Asker.Ask(ctx, q)
	}
	env := tool.EnvFrom(ctx)
	extra := func() map[string]any {
		return map[string]any{"description": q.Text, "choices": q.Choices, "session_key": env.SessionID, "turn_id": env.TurnID,
			"surface": first(a.r.opts.Platform, "cli")}
	}
	a.r.fire(ctx, PreApprovalRequest, env.SessionID, extra())
	choice, err := a.Asker.Ask(ctx, q)
	x := extra()
	x["choice"] = choice
	if err != nil {
		x["choice"], x["error"] = "timeout", err.Error()
	}
	a.r.fire(context.WithoutCancel(ctx), PostApprovalResponse, env.SessionID, x)
	return choice, err
}

// GatewayDispatch runs the pre_gateway_dispatch hooks on a message a person
// sent through the gateway (gateway.Config.Dispatch): the first that
// answers {"action": "skip"} drops it, the first {"action": "rewrite",
// "text": …} replaces its text; {"action": "allow"} or nothing lets it on.
func (r *Runner) GatewayDispatch(ctx context.Context, in schema.Inbound) gateway.DispatchDecision {
	if r == nil {
		return gateway.DispatchDecision{}
	}
	extra := map[string]any{"platform": in.Platform, "chat_id": in.Chat, "chat_type": first(in.ChatType, "dm"), "thread_id": in.Thread,
		"user_id": in.User, "user_name": in.UserName, "message_id": in.MessageID, "text": in.Text}
	for _, h := range r.at(PreGatewayDispatch, "") {
		e := make(map[string]any, len(extra))
		for k, v := range extra {
			e[k] = v
		}
		a := r.run(ctx, PreGatewayDispatch, h, payload{Cwd: r.cwd(ctx), Extra: e}, in.Text)
		switch {
		case a.block:
			return gateway.DispatchDecision{Skip: true, Reason: a.message}
		case a.replaced:
			return gateway.DispatchDecision{Rewrite: true, Text: a.replace}
		}
	}
	return gateway.DispatchDecision{}
}
