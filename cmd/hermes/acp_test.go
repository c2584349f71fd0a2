package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// acpClient runs testdata/acp_client.mjs, the official TypeScript ACP
// SDK's client, against `hermes ARGS` and returns its JSON lines.
func acpClient(t *testing.T, env []string, args []string, steps []map[string]any) []map[string]any {
	t.Helper()
	dir := os.Getenv("HERMES_NODE_MODULES")
	if dir == "" {
		t.Skip("HERMES_NODE_MODULES is not set: the TypeScript ACP SDK is not installed (bash .ci/run installs it into .ci/node/node_modules)")
	}
	if _, err := os.Stat(filepath.Join(dir, "@agentclientprotocol", "sdk")); err != nil {
		t.Skipf("HERMES_NODE_MODULES=%s holds no @agentclientprotocol/sdk: run npm ci --prefix .ci/node", dir)
	}
	cmd := exec.Command("node", filepath.Join("testdata", "acp_client.mjs"), bin, steps2(t, args), steps2(t, steps))
	cmd.Env = append(env, "HERMES_NODE_MODULES="+dir)
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

func steps2(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// updates condenses the client's lines between two prompt results: each
// update as "kind detail", chunks of one kind joined, and the stop line.
func updates(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		switch {
		case l["update"] != nil:
			u := l["update"].(map[string]any)
			kind := u["sessionUpdate"].(string)
			s := kind
			switch kind {
			case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
				text, _ := u["content"].(map[string]any)["text"].(string)
				if n := len(out); n > 0 && strings.HasPrefix(out[n-1], kind+" ") {
					out[n-1] += text
					continue
				}
				s += " " + text
			case "tool_call":
				var locs []string
				for _, l := range asList(u["locations"]) {
					locs = append(locs, l.(map[string]any)["path"].(string))
				}
				s += fmt.Sprintf(" %v %v %v %v", u["toolCallId"], u["status"], u["kind"], locs)
			case "tool_call_update":
				s += fmt.Sprintf(" %v %v", u["toolCallId"], u["status"])
			}
			out = append(out, s)
		case l["permission"] != nil:
			p := l["permission"].(map[string]any)
			var kinds []string
			for _, o := range asList(p["options"]) {
				if m, ok := o.(map[string]any); ok {
					o = m["kind"] // the TypeScript client prints whole options
				}
				kinds = append(kinds, o.(string))
			}
			call := p["toolCallId"]
			if tc, ok := p["toolCall"].(map[string]any); ok {
				call = tc["toolCallId"]
			}
			out = append(out, fmt.Sprintf("permission %v %v", call, kinds))
		case l["stop"] != nil:
			out = append(out, "stop "+l["stop"].(string))
		case l["error"] != nil:
			out = append(out, fmt.Sprintf("error %v", l["error"].(map[string]any)["code"]))
		case l["new"] != nil:
			out = append(out, "new")
		case l["loaded"] != nil:
			out = append(out, "loaded")
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestACPWithTypeScriptClient: `hermes acp` serves the official TypeScript
// ACP SDK's client over stdio: a new session in the editor's project, a
// turn that reads a file (tool call, its location, its completion, then the
// answer), a turn whose command needs approval (asked in the editor,
// allowed, run), an unknown session refused; then a second editor process
// loads the session (replayed) and continues it, and `hermes sessions
// list` shows it from source acp. The time from a prompt to its first
// update is logged beside chat -q's time to its answer.
func TestACPWithTypeScriptClient(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_read", Name: "read_file", Args: `{"path":"notes.txt"}`}}},
		llmtest.Reply{Content: "The notes say hello."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_rm", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Deleted."},
		llmtest.Reply{Content: "Hi again."},
	)
	defer srv.Close()
	home, project := t.TempDir(), t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("hello from the notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(project, "build"), 0o755)
	env := chatEnv(srv)

	lines := acpClient(t, env, []string{"--home", home, "acp"}, []map[string]any{
		{"new": project},
		{"prompt": "what do my notes say?"},
		{"prompt": "clean the build"},
		{"prompt": "hello?", "session": "nope"},
	})
	init := lines[0]["initialize"].(map[string]any)
	if caps := init["agentCapabilities"].(map[string]any); init["protocolVersion"] != float64(1) || caps["loadSession"] != true {
		t.Fatalf("initialize: %v", init)
	}
	id := lines[1]["new"].(map[string]any)["sessionId"].(string)
	got := updates(lines[1:])
	want := []string{
		"new",
		fmt.Sprintf("tool_call call_read in_progress read [%s]", filepath.Join(project, "notes.txt")),
		"tool_call_update call_read completed",
		"agent_message_chunk The notes say hello.",
		"stop end_turn",
		"tool_call call_rm in_progress execute []",
		"permission call_rm [allow_once allow_always allow_always reject_once]",
		"tool_call_update call_rm completed",
		"agent_message_chunk Deleted.",
		"stop end_turn",
		"error -32602",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(project, "build")); !os.IsNotExist(err) {
		t.Fatalf("the allowed command did not run in the editor's project: %v", err)
	}
	// read_file read notes.txt in the editor's project, not in the
	// directory hermes acp was started in.
	read := false
	for _, l := range lines {
		if u, ok := l["update"].(map[string]any); ok && u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "call_read" {
			read = strings.Contains(steps2(t, u["content"]), "hello from the notes")
		}
	}
	if !read {
		t.Fatalf("the read's result is not in its update: %v", lines)
	}
	var first []float64
	for _, l := range lines {
		if v, ok := l["ms_to_first_update"].(float64); ok {
			first = append(first, v)
		}
	}

	// A second editor process loads the session: the conversation is
	// replayed, then it goes on.
	lines = acpClient(t, env, []string{"--home", home, "acp"}, []map[string]any{
		{"load": id, "cwd": project},
		{"prompt": "say hi"},
	})
	got = updates(lines[1:])
	want = []string{
		"user_message_chunk what do my notes say?",
		fmt.Sprintf("tool_call call_read in_progress read [%s]", filepath.Join(project, "notes.txt")),
		"tool_call_update call_read completed",
		"agent_message_chunk The notes say hello.",
		"user_message_chunk clean the build",
		"tool_call call_rm in_progress execute []",
		"tool_call_update call_rm completed",
		"agent_message_chunk Deleted.",
		"loaded",
		"agent_message_chunk Hi again.",
		"stop end_turn",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("load:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	last := lines[len(lines)-1]
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, id[:8]) || !strings.Contains(out, "acp") {
		t.Fatalf("sessions list:\n%s", out)
	}

	// Measured, not asserted: a prompt's first streamed update beside the
	// chat's, the same scripted reply. chat -q prints its answer whole at
	// the end; plain chat (a line on stdin) streams it as it comes.
	firstByte := func(stdin string, args ...string) time.Duration {
		t.Helper()
		srv.Add(llmtest.Reply{Content: "Hi again."})
		cmd := exec.Command(bin, append([]string{"--home", home, "chat"}, args...)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		stdout, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		if _, err := r.ReadByte(); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		io.Copy(io.Discard, r)
		cmd.Wait()
		return d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	quick, plain := firstByte("", "-q", "say hi"), firstByte("say hi\n")
	t.Logf("ACP prompt to its first update: %.1f and %.1f ms (turns with a tool call, one process), %.1f ms (a plain answer, first prompt of a process that loaded the session; %.1f ms from spawning it); "+
		"from starting the process: chat -q to its answer %.1f ms, plain chat to its first streamed byte %.1f ms",
		first[0], first[1], last["ms_to_first_update"], last["ms_spawn_to_first_update"], ms(quick), ms(plain))
}

// acpPythonClient runs testdata/acp_client.py, the Python ACP SDK's client
// (agent-client-protocol, in $HERMES_ACP_PYTHONPATH), against `hermes
// ARGS` and returns its JSON lines.
func acpPythonClient(t *testing.T, env []string, args []string, steps []map[string]any) []map[string]any {
	t.Helper()
	dir := os.Getenv("HERMES_ACP_PYTHONPATH")
	if dir == "" {
		t.Skip("HERMES_ACP_PYTHONPATH is not set: the Python ACP SDK is not installed (bash .ci/run installs it into .ci/acp-python)")
	}
	if _, err := os.Stat(filepath.Join(dir, "acp")); err != nil {
		t.Skipf("HERMES_ACP_PYTHONPATH=%s holds no acp package: pip install --target it agent-client-protocol==0.12.1", dir)
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "acp_client.py"), bin, steps2(t, args), steps2(t, steps))
	cmd.Env = append(env, "PYTHONPATH="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s\n%s", err, out, stderr.String())
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

// TestACPWithPythonClient: the Python ACP SDK as a second client of the
// real binary: a turn cancelled from the editor while its command runs
// (cancelled, the call failed, the session goes on), and a command
// allowed through a permission request.
func TestACPWithPythonClient(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_sleep", Name: "terminal", Args: `{"command":"sleep 30"}`}}},
		llmtest.Reply{Content: "Still here."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_rm", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Deleted."},
	)
	defer srv.Close()
	home, project := t.TempDir(), t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	os.MkdirAll(filepath.Join(project, "build"), 0o755)
	start := time.Now()
	lines := acpPythonClient(t, chatEnv(srv), []string{"--home", home, "acp"}, []map[string]any{
		{"new": project},
		{"prompt": "wait a while", "cancel_on": "tool_call"},
		{"prompt": "are you there?"},
		{"prompt": "clean the build"},
	})
	if d := time.Since(start); d > 25*time.Second {
		t.Fatalf("took %s: the cancel did not stop the command", d)
	}
	if init := lines[0]["initialize"].(map[string]any); init["protocolVersion"] != float64(1) {
		t.Fatalf("initialize: %v", init)
	}
	id := lines[1]["new"].(map[string]any)["sessionId"].(string)
	got := updates(lines[1:])
	want := []string{
		"new",
		"tool_call call_sleep in_progress execute []",
		"tool_call_update call_sleep failed",
		"stop cancelled",
		"agent_message_chunk Still here.",
		"stop end_turn",
		"tool_call call_rm in_progress execute []",
		"permission call_rm [allow_once allow_always allow_always reject_once]",
		"tool_call_update call_rm completed",
		"agent_message_chunk Deleted.",
		"stop end_turn",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(project, "build")); !os.IsNotExist(err) {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	if out := mustRun(t, home, "sessions", "events", id); !strings.Contains(out, "TurnInterrupted") {
		t.Fatalf("the cancelled turn is not recorded as interrupted:\n%s", out)
	}
}

// An editor that offers terminals (the TypeScript SDK's client, running
// what it is asked to as a real process) shows the terminal tool's command
// live: it is asked to run only `hermes acp attach`, whose output is the
// command's and whose exit code is the command's, and the tool call
// carries the terminal.
func TestACPTerminalInTheEditor(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_sh", Name: "terminal", Args: `{"command":"echo shown in the editor; exit 4"}`}}},
		llmtest.Reply{Content: "It exited 4."},
	)
	defer srv.Close()
	home, project := t.TempDir(), t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	env := append(chatEnv(srv), "HERMES_ACP_TEST_TERMINAL=1")
	lines := acpClient(t, env, []string{"--home", home, "acp"}, []map[string]any{
		{"new": project},
		{"prompt": "run it"},
	})
	var created, released map[string]any
	shown := false
	for _, l := range lines {
		if c, ok := l["terminal_create"].(map[string]any); ok {
			if created != nil {
				t.Fatalf("a second terminal: %v", c)
			}
			created = c
		}
		if r, ok := l["terminal_released"].(map[string]any); ok {
			released = r
		}
		if u, ok := l["update"].(map[string]any); ok && u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "call_sh" {
			shown = shown || strings.Contains(steps2(t, u["content"]), `"terminalId":"t1"`)
		}
	}
	if created == nil || released == nil {
		t.Fatalf("no terminal created and released: %v", lines)
	}
	args := asList(created["args"])
	if created["command"] != bin || len(args) != 3 || args[0] != "acp" || args[1] != "attach" || created["cwd"] != project {
		t.Fatalf("the editor was asked to run %v", created)
	}
	if envs := asList(created["env"]); len(envs) != 1 || envs[0] != "HERMES_ACP_TERMINAL_TOKEN" {
		t.Fatalf("the editor was handed env %v", envs)
	}
	exit, _ := released["exit"].(map[string]any)
	if !strings.Contains(released["output"].(string), "shown in the editor") || exit == nil || exit["exitCode"] != float64(4) {
		t.Fatalf("the editor's terminal showed %v", released)
	}
	if !shown {
		t.Fatalf("no tool call update carries the terminal: %v", lines)
	}
}

// The MCP servers an editor passes with session/new are started as
// config.yaml's would be, and their tools offered to the model (the ACP
// spec makes stdio servers mandatory for agents); an entry without a
// command is refused with invalid params and no session.
func TestACPEditorMCPServers(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "mcp_editor_echo", Args: `{"text":"from the editor"}`}}},
		llmtest.Reply{Content: "The editor's server echoed."},
	)
	defer srv.Close()
	home, project := t.TempDir(), t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	cmd, env := mcptest.Command(mcptest.Basic)
	server := map[string]any{"name": "editor", "command": cmd, "args": []string{}, "env": []map[string]string{{"name": mcptest.EnvVar, "value": env[mcptest.EnvVar]}}}
	lines := acpClient(t, chatEnv(srv), []string{"--home", home, "acp"}, []map[string]any{
		{"new": project, "mcpServers": []any{map[string]any{"name": "broken", "command": "", "args": []string{}, "env": []any{}}}},
		{"new": project, "mcpServers": []any{server}},
		{"prompt": "echo through the editor's server"},
	})
	caps := lines[0]["initialize"].(map[string]any)["agentCapabilities"].(map[string]any)
	if mc, _ := caps["mcpCapabilities"].(map[string]any); mc["http"] != true || mc["sse"] != true {
		t.Fatalf("mcpCapabilities %v", caps["mcpCapabilities"])
	}
	got := updates(lines[1:])
	if len(got) == 0 || got[0] != "error -32602" {
		t.Fatalf("the server without a command: %v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !offers(reqs[0], "mcp_editor_echo") {
		t.Fatalf("the model was not offered the editor's server's tools: %v", reqs[0].Body["tools"])
	}
	if second := string(reqs[1].Raw); !strings.Contains(second, "echo: from the editor") {
		t.Fatalf("the tool's result did not reach the model: %s", second)
	}
	if out := mustRun(t, home, "sessions", "list"); strings.Count(out, "acp") != 1 {
		t.Fatalf("the refused session/new made a session:\n%s", out)
	}
}
