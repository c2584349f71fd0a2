package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
)

type named string

func (n named) Spec() agent.ToolSpec                                 { return agent.ToolSpec{Name: string(n)} }
func (n named) Flags() agent.ToolFlags                               { return agent.ToolFlags{} }
func (n named) Run(context.Context, json.RawMessage) (string, error) { return "", nil }

func TestSelection(t *testing.T) {
	r := NewRegistry()
	r.Register("terminal", named("terminal"), named("process"))
	r.Register("file", named("read_file"), named("write_file"))
	r.Register("web", named("web_search"), named("web_extract"))
	if err := r.Register("file", named("read_file")); err == nil {
		t.Fatal("duplicate name accepted")
	}
	cases := []struct {
		s    Selection
		want string
	}{
		{Selection{}, "[process read_file terminal web_extract web_search write_file]"},
		{Selection{Toolsets: []string{"file"}}, "[read_file write_file]"},
		{Selection{DisabledToolsets: []string{"web"}, DisabledTools: []string{"write_*"}}, "[process read_file terminal]"},
		{Selection{Toolsets: []string{"file"}, EnabledTools: []string{"web_search"}}, "[read_file web_search write_file]"},
		{Selection{DisabledTools: []string{"*"}, EnabledTools: []string{"terminal"}}, "[terminal]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(r.Select(c.s).Names()); got != c.want {
			t.Errorf("%+v → %s, want %s", c.s, got, c.want)
		}
	}
	if err := (Selection{DisabledTools: []string{"[bad"}}).Validate(); err == nil {
		t.Error("bad pattern accepted")
	}
}
