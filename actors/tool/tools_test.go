package tool_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// freshTool builds its schema afresh on every Spec call, as most tools do.
type freshTool struct {
	name  string
	calls *int
}

func (f freshTool) Spec() model.ToolSpec {
	*f.calls++
	return model.ToolSpec{Name: f.name, Parameters: map[string]any{"type": "object"}}
}
func (freshTool) Flags() tool.Flags { return tool.Flags{} }
func (freshTool) Run(context.Context, json.RawMessage) (string, error) {
	return "", nil
}

// TestToolsSpecsAreStable: a toolbox offers the same schema maps on every
// step (providers keep them encoded by identity), in name order, reading
// each tool's Spec once; a caller changing the slice it got changes
// nothing for the next.
func TestToolsSpecsAreStable(t *testing.T) {
	n := 0
	ts := tool.NewTools(freshTool{"b", &n}, freshTool{"a", &n}, freshTool{"c", &n})
	first := ts.Specs()
	calls := n
	for i := 0; i < 3; i++ {
		got := ts.Specs()
		if len(got) != 3 || got[0].Name != "a" || got[1].Name != "b" || got[2].Name != "c" {
			t.Fatalf("specs %+v, want a, b, c", got)
		}
		for j := range got {
			if reflect.ValueOf(got[j].Parameters).Pointer() != reflect.ValueOf(first[j].Parameters).Pointer() {
				t.Fatalf("step %d: %s's schema is a new map", i, got[j].Name)
			}
		}
		got[0].Name = "changed"
		_ = append(got, model.ToolSpec{Name: "extra"})
	}
	if n != calls {
		t.Fatalf("Spec read %d more times after the toolbox was made", n-calls)
	}
	if names := ts.Names(); len(names) != 3 || names[0] != "a" {
		t.Fatalf("names %v", names)
	}
}
