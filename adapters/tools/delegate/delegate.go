// Package delegate is delegate_task: the agent hands a self-contained task
// to a subagent — a child session actor under its supervision, with its
// own stream, restricted toolsets and the parent's iteration budget — and
// gets its final answer back as the tool result.
package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Tool is delegate_task.
type Tool struct{}

func (Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "delegate_task", Description: "Hand a self-contained task to a subagent that works with its own context and tools and reports back. Give it the goal, the context it needs (it cannot see this conversation), and optionally the toolsets it may use. It shares your iteration budget.",
		Parameters: map[string]any{"type": "object", "required": []string{"goal"}, "properties": map[string]any{
			"goal":     map[string]any{"type": "string"},
			"context":  map[string]any{"type": "string"},
			"toolsets": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		}}}
}

// Flags: none; the loop keeps at most one delegate_task per response.
func (Tool) Flags() tool.Flags { return tool.Flags{} }

func (Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Goal     string   `json:"goal"`
		Context  string   `json:"context"`
		Toolsets []string `json:"toolsets"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if strings.TrimSpace(a.Goal) == "" {
		return "", errors.New("goal is empty")
	}
	env := tool.EnvFrom(ctx)
	if env.Delegate == nil {
		return "", errors.New("delegation is not available in this session")
	}
	res, err := env.Delegate.Delegate(ctx, tool.DelegateRequest{Goal: a.Goal, Context: a.Context, Toolsets: a.Toolsets})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Subagent %s finished (%s):\n%s", res.SessionID, res.Status, res.Answer), nil
}
