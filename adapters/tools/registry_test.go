package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

type named string

func (n named) Spec() model.ToolSpec                                 { return model.ToolSpec{Name: string(n)} }
func (n named) Flags() tool.Flags                                    { return tool.Flags{} }
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

// TestExecuteCodeNeedsTheTerminal: with the terminal disabled, the red
// team still had execute_code, a shell by another name.
func TestExecuteCodeNeedsTheTerminal(t *testing.T) {
	r := NewRegistry()
	r.Register("terminal", named("terminal"), named("process"))
	r.Register("code_execution", named("execute_code"))
	r.Register("file", named("read_file"))
	r.Require("execute_code", "terminal")
	cases := []struct {
		sels []Selection
		want string
	}{
		{[]Selection{{}}, "[execute_code process read_file terminal]"},
		{[]Selection{{DisabledToolsets: []string{"terminal"}}}, "[read_file]"},
		{[]Selection{{DisabledTools: []string{"terminal"}}}, "[process read_file]"},
		{[]Selection{{DisabledTools: []string{"terminal"}, EnabledTools: []string{"execute_code"}}}, "[process read_file]"},
		{[]Selection{{Toolsets: []string{"code_execution"}}}, "[]"},
		// A subagent asking for code_execution alone gets none either.
		{[]Selection{{}, {Toolsets: []string{"code_execution", "file"}}}, "[read_file]"},
		{[]Selection{{}, {Toolsets: []string{"code_execution", "terminal"}}}, "[execute_code process terminal]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(r.Select(c.sels...).Names()); got != c.want {
			t.Errorf("%+v → %s, want %s", c.sels, got, c.want)
		}
	}
}

type closer struct {
	named
	closed *int
}

func (c closer) Close() error { *c.closed++; return nil }

func TestCloseClosesTools(t *testing.T) {
	n := 0
	r := NewRegistry()
	r.Register("terminal", closer{named("terminal"), &n}, named("process"))
	if err := r.Close(); err != nil || n != 1 {
		t.Fatalf("closed %d times: %v", n, err)
	}
}

// specCounted is a tool counting the specs built of it.
type specCounted struct {
	named
	n *int
}

func (s specCounted) Spec() model.ToolSpec { *s.n++; return s.named.Spec() }

// TestToolsetsOfNames: the toolsets of the tools named are what All's
// entries of them say (a registered tool over a source's of the same name;
// a source's tool by its toolset; an unknown name none), each once and
// sorted, found without building a registered tool's spec (every new
// session's skills index asked for them, building every tool's spec).
func TestToolsetsOfNames(t *testing.T) {
	specs := 0
	r := NewRegistry()
	r.Register("terminal", specCounted{"terminal", &specs}, specCounted{"process", &specs})
	r.Register("file", specCounted{"read_file", &specs}, specCounted{"write_file", &specs})
	r.Register("web", specCounted{"web_search", &specs})
	src := &changing{}
	src.set("mcp_one", "read_file")
	r.AddSource("mcp-x", src)
	names := []string{"write_file", "terminal", "process", "mcp_one", "read_file", "nope"}
	want := map[string]bool{}
	for _, e := range r.All() {
		for _, n := range names {
			if e.Tool.Spec().Name == n {
				want[e.Toolset] = true
			}
		}
	}
	specs = 0
	got := r.Toolsets(names)
	if fmt.Sprint(got) != "[file mcp-x terminal]" || len(got) != len(want) {
		t.Fatalf("toolsets %v, want those of All: %v", got, want)
	}
	if specs != 0 {
		t.Fatalf("%d specs of registered tools built; want none", specs)
	}
	if got := r.Toolsets([]string{"terminal"}); fmt.Sprint(got) != "[terminal]" {
		t.Fatalf("one tool's toolset: %v", got)
	}
}
