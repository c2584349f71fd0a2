package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// fakeServer is a config.yaml entry starting a fake MCP server of mode
// (this test binary; see mcptest).
func fakeServer(mode string, extra string) string {
	cmd, env := mcptest.Command(mode)
	return fmt.Sprintf("    command: %q\n    env: {%s: %s}\n%s", cmd, mcptest.EnvVar, env[mcptest.EnvVar], extra)
}

func writeConfig(t *testing.T, home, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// events returns the session's events as decoded JSON lines.
func sessionEvents(t *testing.T, home, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(mustRun(t, home, "sessions", "events", id, "--json")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestMCPToolsInChat: a chat offers the tools of the MCP servers of
// config.yaml, calls them, records the calls with their server, runs the
// shell hooks around them and records every hook decision; a server that
// never answers costs the first prompt no more than its connect_timeout.
func TestMCPToolsInChat(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "mcp_fake_echo", Args: `{"text":"hi"}`}, {ID: "c2", Name: "mcp_fake_fail", Args: `{}`}}},
		llmtest.Reply{Content: "The server said hi."})
	defer srv.Close()
	home := t.TempDir()
	hooksDir := t.TempDir()
	hook := func(name, body string) string {
		p := filepath.Join(hooksDir, name)
		os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		return p
	}
	writeConfig(t, home, fmt.Sprintf(`model: m
mcp_servers:
  fake:
%s  mute:
%s
hooks_auto_accept: true
hooks:
  pre_tool_call:
    - command: %s
      matcher: "mcp_fake_fail"
  pre_llm_call:
    - command: %s
  on_session_end:
    - command: %s
`, fakeServer(mcptest.Basic, ""), fakeServer(mcptest.HangHandshake, "    connect_timeout: 1\n"),
		hook("guard.sh", `echo '{"decision": "block", "reason": "fail is not allowed today"}'`),
		hook("ctx.sh", `echo '{"context": "[on-call: Ada]"}'`),
		hook("end.sh", "cat > "+filepath.Join(hooksDir, "end.json"))))
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "say hi through the server")
	if code != 0 || out != "The server said hi.\n" {
		t.Fatalf("exit %d: %q\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "mcp_server=mute") {
		t.Errorf("the server that never answered is not reported:\n%s", errOut)
	}
	reqs := srv.Requests()
	if !offers(reqs[0], "mcp_fake_echo") || !offers(reqs[0], "mcp_fake_list_resources") || offers(reqs[0], "mcp_mute_echo") {
		t.Fatalf("the first request's tools: %v", reqs[0].Body["tools"])
	}
	first := reqs[0].Body["messages"].([]any)[1].(map[string]any)["content"]
	if first != "say hi through the server\n\n[on-call: Ada]" {
		t.Fatalf("pre_llm_call context not sent: %q", first)
	}
	second := string(reqs[1].Raw)
	for _, w := range []string{"echo: hi", "blocked by a pre_tool_call hook: fail is not allowed today"} {
		if !strings.Contains(second, w) {
			t.Errorf("the second request lacks %q", w)
		}
	}
	id := sessionIDFrom(t, errOut)
	var servers, hookRuns []string
	for _, e := range sessionEvents(t, home, id) {
		p, _ := e["payload"].(map[string]any)
		switch e["type"] {
		case "ToolCallStarted":
			servers = append(servers, fmt.Sprint(p["name"], "@", p["server"]))
		case "HookRan":
			hookRuns = append(hookRuns, fmt.Sprint(p["event"], ":", p["decision"]))
		}
	}
	if strings.Join(servers, " ") != "mcp_fake_echo@fake mcp_fake_fail@fake" {
		t.Errorf("ToolCallStarted: %v", servers)
	}
	if strings.Join(hookRuns, " ") != "pre_llm_call:context pre_tool_call:block on_session_end:none" {
		t.Errorf("HookRan: %v", hookRuns)
	}
	if data, err := os.ReadFile(filepath.Join(hooksDir, "end.json")); err != nil || !strings.Contains(string(data), `"completed":true`) || !strings.Contains(string(data), id) {
		t.Errorf("on_session_end got %s (%v)", data, err)
	}
	// Replay reproduces the turn from the recorded MCP results; search
	// finds them.
	if out := mustRun(t, home, "sessions", "replay", id); !strings.Contains(out, "matches the record") {
		t.Errorf("replay: %s", out)
	}
	if out := mustRun(t, home, "search", "tool:mcp_fake_echo"); !strings.Contains(out, id[:8]) {
		t.Errorf("search tool:mcp_fake_echo: %s", out)
	}
}

func TestMCPCommands(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "# mine\nmodel: gpt-4o-mini # keep this comment\n")
	cmd, env := mcptest.Command(mcptest.Basic)
	mustRun(t, home, "mcp", "add", "fake", "--env", mcptest.EnvVar+"="+env[mcptest.EnvVar], "--exclude", "add_tool", "--", cmd)
	mustRun(t, home, "mcp", "add", "gone", "--connect-timeout", "5s", "--", "/nonexistent/server", "--flag")
	mustRun(t, home, "mcp", "add", "remote", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization=Bearer ${NOPE}", "--disabled", "--approval")
	if _, errOut, err := run(t, home, "mcp", "add", "fake", "--", "x"); err == nil || !strings.Contains(errOut, "exists already") {
		t.Fatalf("adding a name twice: %v %s", err, errOut)
	}
	if _, errOut, err := run(t, home, "mcp", "add", "bad name", "--", "x"); err == nil || !strings.Contains(errOut, `MCP server name "bad name"`) {
		t.Fatalf("a bad name: %v %s", err, errOut)
	}
	data, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	for _, w := range []string{"# mine\n", "model: gpt-4o-mini # keep this comment\n", "mcp_servers:\n  fake:\n", "exclude: [add_tool]", "enabled: false", "approval: true", "connect_timeout: 5"} {
		if !strings.Contains(string(data), w) {
			t.Fatalf("config.yaml lacks %q:\n%s", w, data)
		}
	}
	var rows []mcpRow
	json.Unmarshal([]byte(mustRun(t, home, "mcp", "list", "--json")), &rows)
	states := map[string]mcpRow{}
	for _, r := range rows {
		states[r.Name] = r
	}
	if r := states["fake"]; r.State != "connected" || r.Tools != 8 || r.Peer != "hermes-fake-basic 0.0.1" || r.Handshake == "" {
		t.Errorf("fake: %+v", r)
	}
	if r := states["gone"]; r.State != "failed" || !strings.Contains(r.Error, "/nonexistent/server") {
		t.Errorf("gone: %+v", r)
	}
	if r := states["remote"]; r.State != "disabled" || !r.Approval {
		t.Errorf("remote: %+v", r)
	}
	out := mustRun(t, home, "mcp", "test", "fake")
	for _, w := range []string{"connected to hermes-fake-basic 0.0.1 over stdio in ", "8 tools", "mcp_fake_echo", "mcp_fake_read_resource"} {
		if !strings.Contains(out, w) {
			t.Errorf("mcp test lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "mcp_fake_add_tool") {
		t.Error("tools.exclude not applied")
	}
	if _, errOut, err := run(t, home, "mcp", "test", "gone"); err == nil || !strings.Contains(errOut, "MCP server gone (stdio /nonexistent/server --flag) failed") {
		t.Errorf("testing a broken server: %v %s", err, errOut)
	}
	if out := mustRun(t, home, "tools", "list"); !strings.Contains(out, "mcp-fake") || !strings.Contains(out, "mcp_fake_echo") {
		t.Errorf("tools list: %s", out)
	}
	mustRun(t, home, "mcp", "remove", "gone")
	mustRun(t, home, "mcp", "remove", "fake")
	mustRun(t, home, "mcp", "remove", "remote")
	if _, errOut, err := run(t, home, "mcp", "remove", "remote"); err == nil || !strings.Contains(errOut, "no MCP server remote") {
		t.Errorf("removing twice: %v %s", err, errOut)
	}
	data, _ = os.ReadFile(filepath.Join(home, "config.yaml"))
	if string(data) != "# mine\nmodel: gpt-4o-mini # keep this comment\n" {
		t.Errorf("after removing them all:\n%s", data)
	}
}

// BenchmarkChatStartupMCP is a whole `hermes chat -q` against an instant
// model, with no MCP server and with 5 configured: what the servers add
// to a one-shot question (they start at once, the first prompt waits for
// their tools).
//
//	HERMES_NODE_MODULES=$PWD/.ci/node/node_modules go test -run '^$' -bench ChatStartupMCP -benchtime 5x ./cmd/hermes/
func BenchmarkChatStartupMCP(b *testing.B) {
	run := func(b *testing.B, servers string) {
		home := b.TempDir()
		os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\n"+servers), 0o600)
		srv := llmtest.New()
		defer srv.Close()
		srv.SetDefault(llmtest.Reply{Content: "ok"})
		env := chatEnv(srv)
		b.ResetTimer()
		for range b.N {
			cmd := exec.Command(bin, "--home", home, "chat", "-q", "hi")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/chat")
	}
	five := func(entry func(i int) string) string {
		var sb strings.Builder
		sb.WriteString("mcp_servers:\n")
		for i := range 5 {
			sb.WriteString(entry(i))
		}
		return sb.String()
	}
	b.Run("none", func(b *testing.B) { run(b, "") })
	b.Run("go-5", func(b *testing.B) {
		fake := filepath.Join(b.TempDir(), "mcpfake")
		if out, err := exec.Command("go", "build", "-o", fake, "../../adapters/mcp/mcptest/mcpfake").CombinedOutput(); err != nil {
			b.Fatalf("build mcpfake: %v\n%s", err, out)
		}
		run(b, five(func(i int) string { return fmt.Sprintf("  s%d:\n    command: %q\n    args: [basic]\n", i, fake) }))
	})
	b.Run("node-5", func(b *testing.B) {
		script := filepath.Join(mcptest.NodeModules(b), "@modelcontextprotocol", "server-everything", "dist", "index.js")
		run(b, five(func(i int) string {
			return fmt.Sprintf("  s%d:\n    command: node\n    args: [%q, stdio]\n", i, script)
		}))
	})
}

// TestMCPApprovalAndSecretsInChat: the tools of an approval: true server
// ask the person at the terminal, as dangerous commands do, and every
// decision is an event; a key in a server's env never reaches the model
// through what its tools return.
func TestMCPApprovalAndSecretsInChat(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a3210fedcba"
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "mcp_guarded_echo", Args: `{"text":"the key is ` + secret + `"}`}}},
		llmtest.Reply{Content: "first done"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "mcp_guarded_echo", Args: `{"text":"again"}`}}},
		llmtest.Reply{Content: "second done"})
	defer srv.Close()
	home := t.TempDir()
	writeConfig(t, home, "model: m\nmcp_servers:\n  guarded:\n"+fakeServer(mcptest.Basic, "    approval: true\n")+
		"    # the fake ignores it: it stands for a server's own key\n")
	cfg, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	writeConfig(t, home, strings.Replace(string(cfg), "env: {", "env: {SERVICE_API_TOKEN: "+secret+", ", 1))

	_, errOut, code := hermes(t, chatEnv(srv), "once\n", "--home", home, "chat", "-q", "echo the key")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "mcp_guarded_echo, a tool of MCP server guarded") {
		t.Fatalf("nobody was asked:\n%s", errOut)
	}
	second := string(srv.Requests()[1].Raw)
	if strings.Contains(second, "echo: the key is "+secret) {
		t.Fatalf("the server's key came back to the model:\n%s", second)
	}
	if !strings.Contains(second, "echo: the key is [REDACTED:mcp_servers.guarded.env.SERVICE_API_TOKEN") {
		t.Fatalf("the result was not redacted by name:\n%s", second)
	}
	id := sessionIDFrom(t, errOut)
	_, errOut, code = hermes(t, chatEnv(srv), "deny\n", "--home", home, "chat", "--resume", id, "-q", "again")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(string(srv.Requests()[3].Raw), "denied by the user: mcp_guarded_echo") {
		t.Fatal("the denial did not reach the model")
	}
	var decisions []string
	for _, e := range sessionEvents(t, home, id) {
		if e["type"] == "ApprovalDecided" {
			p := e["payload"].(map[string]any)
			decisions = append(decisions, fmt.Sprint(p["pattern"], ":", p["decision"], "/", p["by"]))
		}
	}
	if strings.Join(decisions, " ") != "mcp_guarded_echo:once/user mcp_guarded_echo:deny/user" {
		t.Fatalf("decisions: %v", decisions)
	}
}

// TestMCPConfigIsChecked: a misspelt key under mcp_servers or hooks, or
// an entry that cannot work, stops hermes naming it.
func TestMCPConfigIsChecked(t *testing.T) {
	for body, want := range map[string]string{
		"mcp_servers:\n  fs:\n    comand: npx\n":                          "unknown key mcp_servers.fs.comand: did you mean mcp_servers.fs.command?",
		"mcp_servers:\n  fs:\n    url: ftp://x\n":                         "mcp_servers.fs.url",
		"mcp_servers:\n  fs:\n    command: x\n    timeout: soon\n":        "not a number of seconds",
		"hooks:\n  pre_tool_call:\n    - comand: x\n":                     "unknown key hooks.pre_tool_call[0].comand",
		"hooks:\n  pre_tool_cal:\n    - command: x\n":                     "hooks.pre_tool_cal: unknown hook event",
		"mcp_servers:\n  fs:\n    command: x\n    tools: {includ: [a]}\n": "did you mean mcp_servers.fs.tools.include?",
	} {
		home := t.TempDir()
		writeConfig(t, home, "model: m\n"+body)
		_, errOut, err := run(t, home, "mcp", "list", "--no-connect")
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("%q: %v %s", body, err, errOut)
		}
	}
}
