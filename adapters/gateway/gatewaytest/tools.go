package gatewaytest

import (
	"context"
	"encoding/json"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// ApprovalTool is a "terminal" tool for gateway tests: it asks a (the
// real terminal tool's approver) about its command, as the terminal tool
// does before running one, and says "ran: COMMAND" when allowed.
func ApprovalTool(a *terminal.Approver) tool.Tool { return approvalTool{a} }

type approvalTool struct{ a *terminal.Approver }

func (approvalTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "run a command", Parameters: map[string]any{"type": "object"}}
}
func (approvalTool) Flags() tool.Flags { return tool.Flags{} }
func (t approvalTool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var v struct{ Command string }
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	if err := t.a.Approve(ctx, v.Command); err != nil {
		return "", err
	}
	return "ran: " + v.Command, nil
}
