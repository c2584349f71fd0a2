package gatewaytest

import (
	"context"
	"encoding/json"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// ApprovalTool is a "terminal" tool for gateway tests: it asks a (the
// real terminal tool's approver) about its command, as the terminal tool
// does before running one, and says "ran: COMMAND" when allowed.
func ApprovalTool(a *terminal.Approver) agent.Tool { return approvalTool{a} }

type approvalTool struct{ a *terminal.Approver }

func (approvalTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "terminal", Description: "run a command", Parameters: map[string]any{"type": "object"}}
}
func (approvalTool) Flags() agent.ToolFlags { return agent.ToolFlags{} }
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
