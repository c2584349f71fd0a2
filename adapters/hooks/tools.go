package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/tool"
)

// Tool returns t with the pre_tool_call and post_tool_call hooks whose
// matcher fits its name around every call; t itself when none does.
func (r *Runner) Tool(t tool.Tool) tool.Tool {
	if r == nil {
		return t
	}
	name := t.Spec().Name
	pick := func(event string) []*hook {
		var out []*hook
		for _, h := range r.hooks[event] {
			if h.match == nil || h.match.MatchString(name) {
				out = append(out, h)
			}
		}
		return out
	}
	pre, post := pick(PreToolCall), pick(PostToolCall)
	if len(pre) == 0 && len(post) == 0 {
		return t
	}
	return &hooked{Tool: t, r: r, pre: pre, post: post}
}

// Tools wraps each of ts with Tool.
func (r *Runner) Tools(ts ...tool.Tool) []tool.Tool {
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		out[i] = r.Tool(t)
	}
	return out
}

type hooked struct {
	tool.Tool
	r         *Runner
	pre, post []*hook
}

// Run runs the pre_tool_call hooks (the first that blocks stops the
// call: the model reads why), the tool, then the post_tool_call hooks.
func (h *hooked) Run(ctx context.Context, args json.RawMessage) (string, error) {
	env := tool.EnvFrom(ctx)
	name := h.Spec().Name
	var input any
	if json.Unmarshal(args, &input) != nil {
		input = nil
	}
	if _, ok := input.(map[string]any); !ok {
		input = nil
	}
	p := func(extra map[string]any) payload {
		extra["turn_id"] = env.TurnID
		return payload{ToolName: &name, ToolInput: input, SessionID: env.SessionID, Cwd: first(h.r.opts.Dir, env.WorkingDir), Extra: extra}
	}
	for _, hk := range h.pre {
		if a := h.r.run(ctx, PreToolCall, hk, p(map[string]any{})); a.block {
			return "", fmt.Errorf("blocked by a pre_tool_call hook: %s", a.message)
		}
	}
	start := time.Now()
	out, err := h.Tool.Run(ctx, args)
	if len(h.post) > 0 {
		extra := map[string]any{"result": out, "status": "ok", "error_message": nil, "duration_ms": time.Since(start).Milliseconds()}
		if err != nil {
			extra["status"], extra["error_message"] = "error", err.Error()
		}
		// An interrupted call still tells its hooks how it ended.
		hctx := context.WithoutCancel(ctx)
		for _, hk := range h.post {
			h.r.run(hctx, PostToolCall, hk, p(extra))
		}
	}
	return out, err
}

// Close closes the wrapped tool when it holds something.
func (h *hooked) Close() error {
	if c, ok := h.Tool.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// TurnStarted runs on_session_start on a session's first turn, then the
// pre_llm_call hooks, whose contexts it returns (agent.TurnHooks).
func (r *Runner) TurnStarted(ctx context.Context, t agent.TurnStart) string {
	if r == nil {
		return ""
	}
	env := tool.EnvFrom(ctx)
	cwd := first(r.opts.Dir, env.WorkingDir)
	if t.First {
		for _, h := range r.hooks[OnSessionStart] {
			r.run(ctx, OnSessionStart, h, payload{SessionID: t.SessionID, Cwd: cwd,
				Extra: map[string]any{"model": t.Model, "platform": r.opts.Platform}})
		}
	}
	var parts []string
	for _, h := range r.hooks[PreLLMCall] {
		a := r.run(ctx, PreLLMCall, h, payload{SessionID: t.SessionID, Cwd: cwd, Extra: map[string]any{"turn_id": t.TurnID,
			"user_message": t.UserText, "is_first_turn": t.First, "model": t.Model, "platform": r.opts.Platform}})
		if a.context != "" {
			parts = append(parts, a.context)
		}
	}
	return strings.Join(parts, "\n\n")
}

// TurnEnded runs the on_session_end hooks: Hermes runs them at the end of
// every turn, saying whether it completed (agent.TurnHooks).
func (r *Runner) TurnEnded(ctx context.Context, t agent.TurnEnd) {
	if r == nil {
		return
	}
	env := tool.EnvFrom(ctx)
	for _, h := range r.hooks[OnSessionEnd] {
		r.run(ctx, OnSessionEnd, h, payload{SessionID: t.SessionID, Cwd: first(r.opts.Dir, env.WorkingDir), Extra: map[string]any{
			"turn_id": t.TurnID, "completed": t.Completed, "interrupted": t.Interrupted, "model": t.Model, "platform": r.opts.Platform}})
	}
}
