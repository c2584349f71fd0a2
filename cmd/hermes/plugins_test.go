package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// buildGoPlugin builds the Go plugin of adapters/plugins/testdata/wordcount into a
// directory of its own, beside its manifest.
func buildGoPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "wordcount"), "../../adapters/plugins/testdata/wordcount").CombinedOutput()
	if err != nil {
		t.Fatalf("go build the plugin: %v\n%s", err, out)
	}
	copyFile(t, filepath.Join("..", "..", "adapters", "plugins", "testdata", "wordcount", "hermes-plugin.yaml"), filepath.Join(dir, "hermes-plugin.yaml"))
	return dir
}

// mcpPython is the Python that has the official MCP SDK
// ($HERMES_MCP_PYTHON, which .ci/run makes).
func mcpPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("HERMES_MCP_PYTHON")
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HERMES_MCP_PYTHON is not set: .ci/run installs the MCP Python SDK (mcp==2.3.0) into .ci/mcp-venv and exports it")
		}
		t.Skip("HERMES_MCP_PYTHON is not set: python3 -m venv .ci/mcp-venv && .ci/mcp-venv/bin/pip install mcp==2.3.0, then export HERMES_MCP_PYTHON=$PWD/.ci/mcp-venv/bin/python")
	}
	return py
}

// pythonPluginRepo makes a git repository of the Python plugin of
// adapters/plugins/testdata/shout at version, and returns it with its commit.
func pythonPluginRepo(t *testing.T, repo, py, version string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		gitIn(t, repo, "init", "--quiet", "--initial-branch=main")
	}
	copyFile(t, filepath.Join("..", "..", "adapters", "plugins", "testdata", "shout", "plugin.py"), filepath.Join(repo, "plugin.py"))
	tmpl, _ := os.ReadFile(filepath.Join("..", "..", "adapters", "plugins", "testdata", "shout", "hermes-plugin.yaml.in"))
	m := strings.NewReplacer("PYTHON", py, "VERSION", version).Replace(string(tmpl))
	if err := os.WriteFile(filepath.Join(repo, "hermes-plugin.yaml"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "--quiet", "-m", "version "+version)
	return strings.TrimSpace(gitIn(t, repo, "rev-parse", "HEAD"))
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pluginEvents reads the plugins stream of home's store.
func pluginEvents(t *testing.T, home string) []string {
	t.Helper()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := s.ReadStream(context.Background(), plugins.Stream, events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		switch e := p.(type) {
		case schema.PluginInstalled:
			out = append(out, "installed "+e.Name+" "+e.Kind+" "+e.Commit)
		case schema.PluginUpdated:
			out = append(out, "updated "+e.Name+" "+e.FromCommit+" → "+e.Commit)
		default:
			b, _ := json.Marshal(p)
			out = append(out, p.EventType()+" "+string(b))
		}
	}
	return out
}

// TestPluginsThroughTheBinary: a Go plugin installed from a directory and
// a Python plugin installed from a git repository (pinned to a commit)
// each register a tool and a hook that a chat with the scripted model
// uses: the tools answer, the Go plugin's pre_tool_call hook blocks a
// terminal command, the Python plugin's transform_tool_result hook
// changes what the model reads. The plugins run in the sandbox (their
// home hidden, their directory read-only, Hermes' keys kept from them); a
// plugin that crashes or hangs costs a tool call an error, never the chat.
// /plugins, plugins run, update, disable, enable, a tampered plugin and
// remove follow; every change is an event of the plugins stream.
func TestPluginsThroughTheBinary(t *testing.T) {
	py := mcpPython(t)
	// The home is outside /tmp: the sandbox's /tmp is private and
	// writable, so a plugin kept under it could write itself.
	home, err := os.MkdirTemp("/var/tmp", "hermes-plugins-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	repo := t.TempDir()
	writeConfig(t, home, "model: m\n")
	goDir := buildGoPlugin(t)
	commit1 := pythonPluginRepo(t, repo, py, "0.1.0")

	if out := mustRun(t, home, "plugins", "install", goDir); !strings.Contains(out, "installed wordcount 0.1.0") {
		t.Fatalf("install: %s", out)
	}
	if out := mustRun(t, home, "plugins", "install", "file://"+repo, "--ref", commit1); !strings.Contains(out, "installed shout 0.1.0") || !strings.Contains(out, commit1[:12]) {
		t.Fatalf("install from git: %s", out)
	}
	if _, errOut, err := run(t, home, "plugins", "install", goDir); err == nil || !strings.Contains(errOut, "installed already") {
		t.Fatalf("a second install: %v %s", err, errOut)
	}

	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "c1", Name: "word_count", Args: `{"text":"one two three"}`},
			{ID: "c2", Name: "shout", Args: `{"text":"hi"}`},
			{ID: "c3", Name: "terminal", Args: `{"command":"cat /etc/shadow"}`},
			{ID: "c4", Name: "probe", Args: `{}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c5", Name: "crash", Args: `{}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c6", Name: "hang", Args: `{}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c7", Name: "word_count", Args: `{"text":"still here"}`}}},
		llmtest.Reply{Content: "All done."})
	defer srv.Close()
	env := chatEnv(srv, "PROBE_HOME="+home)
	start := time.Now()
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "use the plugins")
	if code != 0 || out != "All done.\n" {
		t.Fatalf("exit %d %q\n%s", code, out, errOut)
	}
	if d := time.Since(start); d > 120*time.Second {
		t.Errorf("the chat took %s", d)
	}
	reqs := srv.Requests()
	if !offers(reqs[0], "word_count") || !offers(reqs[0], "shout") || !offers(reqs[0], "probe") || offers(reqs[0], "guard") || offers(reqs[0], "tag") {
		t.Fatalf("the tools offered: %v", reqs[0].Body["tools"])
	}
	second := string(reqs[1].Raw)
	for _, w := range []string{"[checked by shout] 3 words", "HI!", "the wordcount plugin keeps terminal away from /etc/shadow",
		"home hidden, own dir read-only, no key"} {
		if !strings.Contains(second, w) {
			t.Errorf("the model did not read %q:\n%s", w, second)
		}
	}
	if third := string(reqs[2].Raw); !strings.Contains(third, "crash") || !strings.Contains(third, "Error") {
		t.Errorf("the crash is not reported to the model: %s", third)
	}
	if fourth := string(reqs[3].Raw); !strings.Contains(fourth, "timed out") {
		t.Errorf("the hang is not reported to the model: %s", fourth)
	}
	if fifth := string(reqs[4].Raw); !strings.Contains(fifth, "[checked by shout] 2 words") {
		t.Errorf("the plugin did not come back after its crash: %s", fifth)
	}
	id := sessionIDFrom(t, errOut)
	var servers, hookRuns []string
	for _, e := range sessionEvents(t, home, id) {
		p, _ := e["payload"].(map[string]any)
		switch e["type"] {
		case "ToolCallStarted":
			servers = append(servers, fmt.Sprint(p["name"], "@", p["server"]))
		case "HookRan":
			hookRuns = append(hookRuns, fmt.Sprint(p["event"], ":", p["command"], ":", p["decision"]))
		}
	}
	if got := strings.Join(servers[:4], " "); got != "word_count@plugin-wordcount shout@plugin-shout terminal@<nil> probe@plugin-wordcount" {
		t.Errorf("calls recorded: %s", got)
	}
	joined := strings.Join(hookRuns, " ")
	for _, w := range []string{"pre_tool_call:plugin:wordcount:block", "transform_tool_result:plugin:shout:transform"} {
		if !strings.Contains(joined, w) {
			t.Errorf("HookRan lacks %s: %s", w, joined)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "plugins", "wordcount", "written-by-plugin")); err == nil {
		t.Error("the plugin wrote its own directory")
	}
	if out := mustRun(t, home, "sessions", "replay", id); !strings.Contains(out, "matches the record") {
		t.Errorf("replay: %s", out)
	}

	// /plugins in a chat; plugins run.
	_, errOut, _ = hermes(t, env, "/plugins\n/exit\n", "--home", home, "chat")
	if !strings.Contains(errOut, "2 plugins:") || !strings.Contains(errOut, "shout 0.1.0: connected") || !strings.Contains(errOut, "wordcount 0.1.0: connected") {
		t.Errorf("/plugins:\n%s", errOut)
	}
	if out := mustRun(t, home, "plugins", "run", "wordcount", "stats", "a b", "c"); out != "3 words, 5 characters\n" {
		t.Errorf("plugins run: %q", out)
	}
	if out := mustRun(t, home, "plugins", "run", "shout", "echo", "hi", "there"); out != "HI THERE\n" {
		t.Errorf("plugins run: %q", out)
	}

	// update moves the git plugin to its new commit; disable, enable.
	commit2 := pythonPluginRepo(t, repo, py, "0.2.0")
	if out := mustRun(t, home, "plugins", "update", "shout"); !strings.Contains(out, "updated shout 0.2.0") || !strings.Contains(out, commit2[:12]) {
		t.Fatalf("update: %s", out)
	}
	if out := mustRun(t, home, "plugins", "update", "shout"); !strings.Contains(out, "up to date") {
		t.Fatalf("a second update: %s", out)
	}
	mustRun(t, home, "plugins", "disable", "wordcount")
	_, errOut, _ = hermes(t, env, "/plugins\n/exit\n", "--home", home, "chat")
	if !strings.Contains(errOut, "1 plugins:") || strings.Contains(errOut, "wordcount") {
		t.Errorf("/plugins with wordcount off:\n%s", errOut)
	}
	mustRun(t, home, "plugins", "enable", "wordcount")

	// A plugin whose files changed since they were pinned is not started.
	os.WriteFile(filepath.Join(home, "plugins", "shout", "plugin.py"), []byte("import os\n"), 0o644)
	var rows []map[string]any
	json.Unmarshal([]byte(mustRun(t, home, "plugins", "list", "--json")), &rows)
	if len(rows) != 2 || rows[0]["Name"] != "shout" || rows[0]["intact"] != false || rows[1]["intact"] != true || rows[0]["commit"] != commit2 {
		t.Fatalf("list: %v", rows)
	}
	_, errOut, _ = hermes(t, env, "/plugins\n/exit\n", "--home", home, "chat")
	if !strings.Contains(errOut, "shout 0.2.0: not started") || !strings.Contains(errOut, "files changed since it was installed") {
		t.Errorf("/plugins with a tampered plugin:\n%s", errOut)
	}

	mustRun(t, home, "plugins", "remove", "shout")
	mustRun(t, home, "plugins", "remove", "wordcount")
	if out := mustRun(t, home, "plugins", "list"); !strings.Contains(out, "No plugins installed") {
		t.Errorf("list after remove: %s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "plugins", "shout")); err == nil {
		t.Error("remove left the files")
	}
	want := []string{"installed wordcount dir ", "installed shout git " + commit1, "updated shout " + commit1 + " → " + commit2,
		`PluginDisabled {"name":"wordcount"}`, `PluginEnabled {"name":"wordcount"}`, `PluginRemoved {"name":"shout"}`, `PluginRemoved {"name":"wordcount"}`}
	if got := pluginEvents(t, home); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the plugins stream:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A plugin's model provider (provider: plugin:wordcount) answers the
// chat: each model call is a call of the plugin's MCP tool, in its
// sandbox, with the chat.completions request; the tool calls it answers
// are run as any model's, and the session records the provider. A
// provider no plugin declares is a clear error, not a hang.
func TestPluginModelProvider(t *testing.T) {
	home, err := os.MkdirTemp("/var/tmp", "hermes-plugins-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if out := mustRun(t, home, "plugins", "install", buildGoPlugin(t)); !strings.Contains(out, "installed wordcount") {
		t.Fatalf("install: %s", out)
	}
	if out := mustRun(t, home, "plugins", "list"); !strings.Contains(out, "providers plugin:wordcount") {
		t.Fatalf("plugins list does not show the provider:\n%s", out)
	}
	writeConfig(t, home, "model: wc-1\nprovider: plugin:wordcount\n")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "PROBE_HOME=" + home}
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "count these four words")
	if code != 0 || out != "the plugin's model (wc-1) read: 4 words\n" {
		t.Fatalf("exit %d %q\n%s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	var providers, tools []string
	for _, e := range sessionEvents(t, home, id) {
		p, _ := e["payload"].(map[string]any)
		switch e["type"] {
		case "SessionStarted":
			providers = append(providers, fmt.Sprint(p["provider"]))
		case "ToolCallStarted":
			tools = append(tools, fmt.Sprint(p["name"]))
		}
	}
	if strings.Join(providers, " ") != "plugin:wordcount" || strings.Join(tools, " ") != "word_count" {
		t.Fatalf("recorded providers %v, tools %v", providers, tools)
	}

	writeConfig(t, home, "model: x\nprovider: plugin:nobody\n")
	_, errOut, code = hermes(t, env, "", "--home", home, "chat", "-q", "hello")
	if code == 0 || !strings.Contains(errOut, "provider plugin:nobody: no enabled plugin declares it (declared: plugin:wordcount)") {
		t.Fatalf("an undeclared provider: exit %d\n%s", code, errOut)
	}
}
