package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// tsClient runs testdata/mcp_client.mjs, the official TypeScript SDK's
// client, and returns its JSON lines.
func tsClient(t *testing.T, env []string, args ...string) []map[string]any {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join("testdata", "mcp_client.mjs")}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v\nstderr: %s", l, err, stderr.String())
		}
		lines = append(lines, m)
	}
	return lines
}

func steps(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPServeToTypeScriptClient: `hermes mcp serve` answers the official
// TypeScript SDK's client over stdio and over streamable HTTP with a
// bearer key: its sessions, search, costs, and turns of the agent.
func TestMCPServeToTypeScriptClient(t *testing.T) {
	modules := mcptest.NodeModules(t)
	srv := llmtest.New(
		llmtest.Reply{Content: "The deploy command is make deploy.", Prompt: 100, Completion: 8},
		llmtest.Reply{Content: "Hello from Hermes.", Prompt: 100, Completion: 4},
		llmtest.Reply{Content: "Still make deploy.", Prompt: 100, Completion: 4})
	defer srv.Close()
	home := t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	env := append(chatEnv(srv), "HERMES_NODE_MODULES="+modules)
	_, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "how do we deploy?")
	if code != 0 {
		t.Fatal(errOut)
	}
	seeded := sessionIDFrom(t, errOut)

	lines := tsClient(t, env, "stdio", bin, steps(t, []string{"--home", home, "mcp", "serve"}), steps(t, []map[string]any{
		{"list": "tools"},
		{"tool": "sessions_list"},
		{"tool": "session_show", "args": map[string]any{"id": seeded[:8]}},
		{"tool": "search", "args": map[string]any{"query": "deploy"}},
		{"tool": "send_message", "args": map[string]any{"text": "say hello"}},
		{"tool": "send_message", "args": map[string]any{"text": "and the deploy command?", "session_id": seeded[:8]}},
		{"tool": "costs", "args": map[string]any{"by": "model"}},
		{"tool": "session_show", "args": map[string]any{"id": "nope"}},
		{"read": "hermes://sessions"},
		{"read": "hermes://sessions/" + seeded},
		{"list": "templates"},
	}))
	if info := lines[0]["server"].(map[string]any); info["name"] != "hermes" || !strings.Contains(lines[0]["instructions"].(string), "send_message") {
		t.Fatalf("initialize: %v", lines[0])
	}
	got := func(i int) map[string]any {
		t.Helper()
		if e, ok := lines[i]["error"]; ok {
			t.Fatalf("step %d: %v", i, e)
		}
		return lines[i]
	}
	if names, _ := json.Marshal(got(1)["names"]); string(names) != `["costs","search","send_message","session_show","sessions_list"]` {
		t.Fatalf("tools: %s", names)
	}
	if !strings.Contains(got(2)["text"].(string), seeded) {
		t.Fatalf("sessions_list: %v", lines[2])
	}
	if !strings.Contains(got(3)["text"].(string), "The deploy command is make deploy.") {
		t.Fatalf("session_show: %v", lines[3])
	}
	if !strings.Contains(got(4)["text"].(string), "<mark>deploy</mark>") {
		t.Fatalf("search: %v", lines[4])
	}
	hello := got(5)
	newID, _ := hello["structured"].(map[string]any)["session_id"].(string)
	if !strings.HasPrefix(hello["text"].(string), "Hello from Hermes.") || newID == "" || newID == seeded {
		t.Fatalf("send_message: %v", hello)
	}
	if again := got(6); again["structured"].(map[string]any)["session_id"] != seeded || !strings.HasPrefix(again["text"].(string), "Still make deploy.") {
		t.Fatalf("send_message to the seeded session: %v", again)
	}
	if !strings.Contains(got(7)["text"].(string), "gpt-4o-mini") {
		t.Fatalf("costs: %v", lines[7])
	}
	if l := got(8); l["isError"] != true || !strings.Contains(l["text"].(string), `no session "nope"`) {
		t.Fatalf("an unknown session: %v", l)
	}
	if !strings.Contains(got(9)["text"].(string), newID) {
		t.Fatalf("hermes://sessions: %v", lines[9])
	}
	if tr := got(10)["text"].(string); !strings.Contains(tr, "## user\n\nhow do we deploy?") || !strings.Contains(tr, "and the deploy command?") {
		t.Fatalf("transcript: %s", tr)
	}
	// The turn it ran is a session like any other, from source mcp.
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, newID[:8]) || !strings.Contains(out, "mcp") {
		t.Fatalf("sessions list:\n%s", out)
	}

	// Over streamable HTTP, with the bearer key.
	serve := exec.Command(bin, "--home", home, "mcp", "serve", "--http", "127.0.0.1:0", "--key", "test-key-0123456789")
	serve.Env = env
	stderr, _ := serve.StderrPipe()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Signal(os.Interrupt); serve.Wait() }()
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`serving MCP at (http://\S+/)`).FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var u string
	select {
	case u = <-url:
	case <-time.After(30 * time.Second):
		t.Fatal("hermes mcp serve --http did not say where it serves")
	}
	lines = tsClient(t, env, "http", u, "wrong-key", steps(t, []map[string]any{{"tool": "sessions_list"}}))
	if _, refused := lines[0]["connect_error"]; !refused {
		t.Fatalf("a wrong key was let in: %v", lines)
	}
	lines = tsClient(t, env, "http", u, "test-key-0123456789", steps(t, []map[string]any{{"tool": "sessions_list"}, {"list": "resources"}}))
	if !strings.Contains(lines[1]["text"].(string), seeded) {
		t.Fatalf("over HTTP: %v", lines)
	}
}

// TestMCPServeRefusesToNestItself: an mcp_servers entry that is this
// Hermes would start itself without end; the nested one refuses.
func TestMCPServeRefusesToNestItself(t *testing.T) {
	home := t.TempDir()
	_, errOut, code := hermes(t, []string{"PATH=" + os.Getenv("PATH"), "HERMES_MCP_SERVE_DEPTH=1"}, "", "--home", home, "mcp", "serve")
	if code == 0 || !strings.Contains(errOut, "is this Hermes itself") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
