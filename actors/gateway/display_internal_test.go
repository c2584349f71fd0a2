package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
)

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		mode, tool, args string
		n                int
		want             string
	}{
		{ProgressAll, "terminal", `{"command":"ls -la"}`, 0, `💻 terminal: "ls -la"`},
		{ProgressNew, "web_search", `{"query":"go  generics\ntutorial"}`, 0, `🔍 web_search: "go generics tutorial"`},
		{ProgressAll, "terminal", `{"command":"find . -name '*.go' -newer go.mod -exec grep -l TODO {} +"}`, 0, `💻 terminal: "find . -name '*.go' -newer go.mod -ex..."`},
		{ProgressAll, "terminal", `{"command":"echo héllo wörld"}`, 10, `💻 terminal: "echo hé..."`},
		{ProgressAll, "mcp_github_list_issues", `{"repo":"hermes-go/hermes","state":"open"}`, 0, `⚙️ mcp_github_list_issues: "hermes-go/hermes"`},
		{ProgressAll, "todo", `{"todos":[{"id":"1"}]}`, 0, `📋 todo...`},
		{ProgressAll, "clarify", ``, 0, `❓ clarify...`},
		{ProgressVerbose, "read_file", `{"path":"go.mod","offset":1}`, 0, "📖 read_file(offset, path)\n{\"path\":\"go.mod\",\"offset\":1}"},
		{ProgressVerbose, "read_file", `{"path":"go.mod","offset":1}`, 12, "📖 read_file(offset, path)\n{\"path\":\"..."},
		{ProgressVerbose, "memory", `{}`, 0, `🧠 memory...`},
	} {
		if got := ProgressLine(c.mode, c.tool, c.args, c.n); got != c.want {
			t.Errorf("ProgressLine(%s, %s, %s, %d) = %q, want %q", c.mode, c.tool, c.args, c.n, got, c.want)
		}
	}
}

// A turn's observations become previews by segment (the text before a
// tool call stays its own message), paced, and one progress message; the
// answer replaces the last segment only when the last call wrote it.
func TestViewSegmentsAndProgress(t *testing.T) {
	now := time.Unix(0, 0)
	var got []string
	v := newView(Display{Streaming: true, ToolProgress: ProgressNew}, schema.Outbound{Key: "k"}, func() time.Time { return now },
		func(o schema.Outbound) { got = append(got, fmt.Sprintf("%s/%d: %s", o.Kind, o.Segment, o.Text)) })
	obs := func(o agent.Observation) { v.observe(o) }
	obs(agent.Observation{Kind: agent.ObserveStep, Step: 1})
	obs(agent.Observation{Kind: agent.ObserveDelta, Text: "Let me"})
	obs(agent.Observation{Kind: agent.ObserveDelta, Text: " check."}) // within previewEvery: held
	obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: "terminal", Text: `{"command":"ls"}`})
	obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: "terminal", Text: `{"command":"pwd"}`}) // new: same tool, no line
	obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: "read_file", Text: `{"path":"a"}`})
	obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: "read_file", Text: `{"path":"a"}`, Depth: 1}) // a subagent's
	obs(agent.Observation{Kind: agent.ObserveStep, Step: 2})
	now = now.Add(time.Second)
	obs(agent.Observation{Kind: agent.ObserveDelta, Text: "Two files."})
	want := []string{
		"preview/0: Let me",
		"preview/0: Let me check.",
		`progress/0: 💻 terminal: "ls"`,
		"progress/0: 💻 terminal: \"ls\"\n📖 read_file: \"a\"",
		"preview/1: Two files.",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("published\n%q\nwant\n%q", got, want)
	}
	if seg, replace := v.answered(); seg != 1 || !replace {
		t.Fatalf("answered %d %v", seg, replace)
	}
	// A last call that only called tools wrote nothing to replace.
	obs(agent.Observation{Kind: agent.ObserveToolStart, Tool: "terminal", Text: `{"command":"ls"}`})
	obs(agent.Observation{Kind: agent.ObserveStep, Step: 3})
	if _, replace := v.answered(); replace {
		t.Fatal("the answer would replace a segment its last call did not write")
	}
	// all: the same call again is counted on its line.
	got = nil
	v2 := newView(Display{ToolProgress: ProgressAll}, schema.Outbound{}, func() time.Time { return now },
		func(o schema.Outbound) { got = append(got, o.Text) })
	for range 3 {
		v2.observe(agent.Observation{Kind: agent.ObserveToolStart, Tool: "terminal", Text: `{"command":"make"}`})
	}
	if last := got[len(got)-1]; last != `💻 terminal: "make" (×3)` {
		t.Fatalf("repeated calls: %q", last)
	}
	if _, replace := v2.answered(); replace {
		t.Fatal("no streaming, yet a segment to replace")
	}
}
