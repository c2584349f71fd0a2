package conformance

import (
	"context"
	"encoding/json"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// gateTool holds a turn until the suite opens the gate (or the turn ends):
// a turn that is in flight for as long as the suite needs.
type gateTool struct {
	open    chan struct{}
	started chan struct{}
}

func (gateTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "wait", Description: "wait", Parameters: map[string]any{"type": "object"}}
}
func (gateTool) Flags() tool.Flags { return tool.Flags{} }
func (g gateTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case g.started <- struct{}{}:
	default:
	}
	select {
	case <-g.open:
		return "waited", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// slowTool runs until its turn ends.
type slowTool struct{ started chan struct{} }

func (slowTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "slow", Description: "works for a long time", Parameters: map[string]any{"type": "object"}}
}
func (slowTool) Flags() tool.Flags { return tool.Flags{} }
func (s slowTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}
