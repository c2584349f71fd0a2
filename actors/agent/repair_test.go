package agent

import (
	"fmt"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

func TestRepairToolName(t *testing.T) {
	known := []string{"read_file", "write_file", "todo", "terminal", "search_files", "delegate_task", "session_search"}
	cases := map[string]string{
		"read_file": "read_file", "read_flie": "read_file", "TodoTool_tool": "todo", "write file": "write_file",
		"ReadFile": "read_file", "read-file": "read_file", "Terminal": "terminal", "terminal_tool": "terminal",
		`read_file">`: "read_file", "search_file": "search_files", "delegateTask": "delegate_task", "todo<|im_end|>": "todo",
		"launch_rockets": "", "x": "", "": "",
	}
	for in, want := range cases {
		got, ok := RepairToolName(in, known)
		if want == "" {
			if ok {
				t.Errorf("%q repaired to %q, want no match", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("%q → %q (%v), want %q", in, got, ok, want)
		}
	}
}

func TestRepairArguments(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `{}`},
		{`   `, `{}`},
		{`{"a":1}`, `{"a":1}`},
		{`{"a":1,}`, `{"a":1}`},
		{`{"a":[1,2,],}`, `{"a":[1,2]}`},
		{`{"a":{"b":1`, `{"a":{"b":1}}`},
		{`{"cmd":"echo hi`, `{"cmd":"echo hi"}`},
		{"{\"s\":\"line1\nline2\ttab\"}", `{"s":"line1\nline2\ttab"}`},
	}
	for _, c := range cases {
		got, _, err := RepairArguments(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q → %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"a": }`, `[1,2]`, `{"a":1}}`, `not json`} {
		if got, _, err := RepairArguments(bad); err == nil {
			t.Errorf("%q repaired to %q, want an error", bad, got)
		}
	}
}

func msg(role, content string, calls ...string) schema.Message {
	m := schema.Message{Role: role, Content: content}
	for _, c := range calls {
		if role == "tool" {
			m.ToolCallID = c
			continue
		}
		m.ToolCalls = append(m.ToolCalls, schema.ToolCall{ID: c, Type: "function", Function: schema.FunctionCall{Name: "t", Arguments: "{}"}})
	}
	return m
}

func shape(ms []schema.Message) string {
	s := ""
	for _, m := range ms {
		s += m.Role[:1]
		if len(m.ToolCalls) > 0 {
			s += fmt.Sprint(len(m.ToolCalls))
		}
		s += " "
	}
	return s
}

func TestRepairHistory(t *testing.T) {
	cases := []struct {
		name string
		in   []schema.Message
		want string
	}{
		{"valid", []schema.Message{msg("user", "a"), msg("assistant", "b")}, "u a "},
		{"two users merge", []schema.Message{msg("user", "a"), msg("user", "b"), msg("assistant", "c")}, "u a "},
		{"two assistants merge", []schema.Message{msg("user", "a"), msg("assistant", "b"), msg("assistant", "c")}, "u a "},
		{"missing result closed", []schema.Message{msg("user", "a"), msg("assistant", "", "1", "2"), msg("tool", "r1", "1")}, "u a2 t t "},
		{"orphan tool dropped", []schema.Message{msg("user", "a"), msg("tool", "x", "9"), msg("assistant", "b")}, "u a "},
		{"starts with assistant", []schema.Message{msg("assistant", "hello"), msg("user", "a")}, "u a u "},
		{"results reordered to calls", []schema.Message{msg("user", "a"), msg("assistant", "", "1", "2"), msg("tool", "r2", "2"), msg("tool", "r1", "1"), msg("user", "b")}, "u a2 t t u "},
		{"duplicate results once", []schema.Message{msg("user", "a"), msg("assistant", "", "1"), msg("tool", "r", "1"), msg("tool", "r", "1")}, "u a1 t "},
	}
	for _, c := range cases {
		got := RepairHistory(c.in)
		if shape(got) != c.want {
			t.Errorf("%s: %q, want %q", c.name, shape(got), c.want)
		}
	}
	out := RepairHistory([]schema.Message{msg("user", "a"), msg("user", "b")})
	if out[0].Content != "a\n\nb" {
		t.Errorf("merged content %q", out[0].Content)
	}
	out = RepairHistory([]schema.Message{msg("user", "a"), msg("assistant", "", "1", "2"), msg("tool", "r2", "2"), msg("tool", "r1", "1")})
	if out[2].ToolCallID != "1" || out[3].ToolCallID != "2" {
		t.Errorf("results not in call order")
	}
	out = RepairHistory([]schema.Message{msg("user", "a"), msg("assistant", "", "1")})
	if out[2].Content != InterruptedResult {
		t.Errorf("missing result content %q", out[2].Content)
	}
}

func TestSplitThink(t *testing.T) {
	cases := []struct{ in, ans, rsn string }{
		{"plain", "plain", ""},
		{"<think>a</think>b", "b", "a"},
		{"x<think>a</think>y<thinking>c</thinking>z", "xyz", "a\n\nc"},
		{"<think>unclosed", "", "unclosed"},
	}
	for _, c := range cases {
		a, r := splitThink(c.in)
		if a != c.ans || r != c.rsn {
			t.Errorf("%q → %q / %q", c.in, a, r)
		}
	}
}

func TestPricesLookup(t *testing.T) {
	p := model.DefaultPrices()
	if pr, ok := p.Lookup("anthropic/claude-sonnet-4-20250514"); !ok || pr.Input != 3 {
		t.Fatalf("prefix lookup %v %v", pr, ok)
	}
	if _, ok := p.Lookup("my-local-model"); ok {
		t.Fatal("unknown model priced")
	}
	if c := p.Cost("unknown", schema.Usage{PromptTokens: 100}); c != 0 {
		t.Fatalf("cost of unknown model %g", c)
	}
}
