package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

// Tool returns t with the tool hooks around every call: pre_tool_call and
// post_tool_call whose matcher fits its name, transform_terminal_output
// (for the terminal tool) and transform_tool_result; t itself when there
// are none.
func (r *Runner) Tool(t tool.Tool) tool.Tool {
	if r == nil {
		return t
	}
	name := t.Spec().Name
	if len(r.at(PreToolCall, name)) == 0 && len(r.at(PostToolCall, name)) == 0 && !r.Has(TransformToolResult) &&
		!(name == "terminal" && r.Has(TransformTerminalOutput)) {
		return t
	}
	return &hooked{Tool: t, r: r}
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
	r *Runner
}

// terminalResult is how the terminal tool ends its result.
var terminalResult = regexp.MustCompile(`(?s)\A(.*)\n\[exit code: (-?\d+)\]\z`)

// Run runs the pre_tool_call hooks (the first that blocks stops the
// call: the model reads why), the tool, the post_tool_call hooks, then
// the transforms of its result, whose replacements are what the model
// reads and what the loop records.
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
		extra["task_id"] = ""
		return payload{ToolName: &name, ToolInput: input, SessionID: env.SessionID, Cwd: first(h.r.opts.Dir, env.WorkingDir), Extra: extra}
	}
	for _, hk := range h.r.at(PreToolCall, name) {
		if a := h.r.run(ctx, PreToolCall, hk, p(map[string]any{}), ""); a.block {
			return "", fmt.Errorf("blocked by a pre_tool_call hook: %s", a.message)
		}
	}
	start := time.Now()
	out, err := h.Tool.Run(ctx, args)
	// An interrupted call still tells its hooks how it ended.
	hctx := context.WithoutCancel(ctx)
	status := func() map[string]any {
		extra := map[string]any{"result": out, "status": "ok", "error_message": nil, "duration_ms": time.Since(start).Milliseconds()}
		if err != nil {
			extra["status"], extra["error_message"] = "error", err.Error()
		}
		return extra
	}
	for _, hk := range h.r.at(PostToolCall, name) {
		h.r.run(hctx, PostToolCall, hk, p(status()), "")
	}
	if name == "terminal" && err == nil {
		if m := terminalResult.FindStringSubmatch(out); m != nil {
			command, _ := input.(map[string]any)["command"].(string)
			code, _ := strconv.Atoi(m[2])
			text := m[1]
			for _, hk := range h.r.at(TransformTerminalOutput, "") {
				pl := payload{SessionID: env.SessionID, Cwd: first(h.r.opts.Dir, env.WorkingDir), Extra: map[string]any{
					"command": command, "output": text, "returncode": code, "task_id": "", "env_type": "local", "turn_id": env.TurnID}}
				if a := h.r.run(hctx, TransformTerminalOutput, hk, pl, text); a.replaced {
					text = a.replace
					break // the first replacement wins
				}
			}
			out = fmt.Sprintf("%s\n[exit code: %d]", text, code)
		}
	}
	for _, hk := range h.r.at(TransformToolResult, "") {
		if a := h.r.run(hctx, TransformToolResult, hk, p(status()), out); a.replaced {
			out = a.replace
			break
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
