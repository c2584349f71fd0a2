package plugins

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

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// launcherEnv makes this test binary the launcher of its plugins, as
// `hermes plugins exec` is for hermes.
const launcherEnv = "HERMES_PLUGINS_TEST_LAUNCHER"

func TestMain(m *testing.M) {
	if os.Getenv(launcherEnv) == "1" {
		spec, err := ReadSpec()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		code, err := Exec(context.Background(), spec, os.Stdin, os.Stdout, os.Stderr, zerolog.Nop())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// outsideTmp is a directory outside /tmp (the sandbox's /tmp is private
// and writable), removed after the test.
func outsideTmp(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("/var/tmp", "hermes-plugins-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// goPlugin builds testdata/wordcount into a plugin directory.
func goPlugin(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "wordcount"), "./testdata/wordcount").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(filepath.Join("testdata", "wordcount", ManifestFile))
	os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644)
	return dir
}

func TestManifestValidate(t *testing.T) {
	for yaml, want := range map[string]string{
		"name: Bad Name\ncommand: [x]\ntools: [a]\n":                                      "name \"Bad Name\"",
		"name: p\ntools: [a]\n":                                                           "command: say how to start",
		"name: p\ncommand: [x]\n":                                                         "registers nothing",
		"name: p\ncommand: [x]\nhooks: [{event: pre_tool_cal, tool: t}]\n":                "hooks[0].event \"pre_tool_cal\"",
		"name: p\ncommand: [x]\ntools: [a]\nneeds: {network: allow}\n":                    "needs.hosts is empty",
		"name: p\ncommand: [x]\ntools: [a]\nneeds: {hosts: [x.org]}\n":                    "use allow",
		"name: p\ncommand: [x]\nplatforms: [{name: telegram, receive: r, send: s}]\n":     "platforms[0].name \"telegram\"",
		"name: p\ncommand: [x]\nplatforms: [{name: chat, receive: r}]\n":                  "platforms[0]: name the MCP tools",
		"name: p\ncommand: [x]\nplatforms: [{name: chat, receive: r, send: s}]\n":         "",
		"name: p\ncommand: [x]\nproviders: [{name: Big, tool: t}]\n":                      "providers[0].name \"Big\"",
		"name: p\ncommand: [x]\nproviders: [{name: m}]\n":                                 "providers[0].tool",
		"name: p\ncommand: [x]\nproviders: [{name: m, tool: complete}]\n":                 "",
		"name: p\ncommand: [x]\ntools: [a]\ncomand: y\n":                                  "field comand not found",
		"name: p\ncommand: [x]\ntools: [a-b]\n":                                           "tools[0] \"a-b\"",
		"name: p\ncommand: [x]\ntools: [a]\nneeds: {network: allow, hosts: [x.org]}\n":    "",
		"name: p\ncommand: [x]\nhooks: [{event: transform_tool_result, tool: t}]\n":       "",
		"name: p\ncommand: [x]\ncommands: [{name: go, tool: run}]\nneeds: {env: [KEY]}\n": "",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(yaml), 0o644)
		_, err := ReadManifest(dir)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", yaml, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}

// TestPolicyNarrowsToNeeds: a plugin gets its own directory read-only,
// the workspace only when it asks, the network only as far as it asks
// and the terminal's policy allows.
func TestPolicyNarrowsToNeeds(t *testing.T) {
	base := sandbox.Defaults("/home/ada", "/home/ada/.hermes")
	base.Writable = []string{"/home/ada/project"}
	p := Plugin{Name: "x", Dir: "/home/ada/.hermes/plugins/x"}
	p.Network, p.Workspace = "off", "read"
	pol := policyFor(base, p, "/home/ada/project")
	if pol.Mode != sandbox.ReadOnly || len(pol.Writable) != 0 || pol.Network != sandbox.NetOff || pol.Visible[len(pol.Visible)-1] != p.Dir {
		t.Fatalf("read, off: %+v", pol)
	}
	p.Network, p.Hosts, p.Workspace = "allow", []string{"api.example.org"}, "write"
	pol = policyFor(base, p, "/home/ada/project")
	if pol.Mode != sandbox.WorkspaceWrite || pol.Writable[0] != "/home/ada/project" || pol.Network != sandbox.NetAllow || pol.Allow[0] != "api.example.org" {
		t.Fatalf("write, allow: %+v", pol)
	}
	base.Network, base.Allow = sandbox.NetAllow, []string{"pypi.org"}
	if pol = policyFor(base, p, "/home/ada/project"); pol.Network != sandbox.NetOff {
		t.Fatalf("a host the terminal may not reach: %+v", pol)
	}
	base.Network = sandbox.NetOff
	p.Network = "on"
	if pol = policyFor(base, p, ""); pol.Network != sandbox.NetOff || pol.Mode != sandbox.ReadOnly {
		t.Fatalf("on under an offline terminal: %+v", pol)
	}
}

// TestBookRecordsAndPins: install from a directory and from git (pinned
// to a commit), update, disable, enable, remove: each an event, each
// install pinned by hash; a tampered tree no longer matches its pin.
func TestBookRecordsAndPins(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	b := &Book{Store: store, Dir: filepath.Join(t.TempDir(), "plugins")}
	ctx := context.Background()
	src := t.TempDir()
	write := func(version string) {
		os.WriteFile(filepath.Join(src, ManifestFile), []byte("name: demo\nversion: "+version+"\ncommand: [./run]\ntools: [hello]\n"), 0o644)
		os.WriteFile(filepath.Join(src, "run"), []byte("#!/bin/sh\n"), 0o755)
	}
	write("1")
	p, err := b.Install(ctx, src, "", false)
	if err != nil || p.Kind != "dir" || !p.Enabled || !strings.HasPrefix(p.Hash, "sha256:") {
		t.Fatalf("%+v %v", p, err)
	}
	if h, _ := Hash(p.Dir); h != p.Hash {
		t.Fatal("the installed tree does not hash to its pin")
	}
	if _, _, err := b.Update(ctx, "demo", "v2"); err == nil {
		t.Fatal("a ref for a directory plugin")
	}
	if _, changed, err := b.Update(ctx, "demo", ""); changed || err != nil {
		t.Fatalf("nothing changed, yet %v %v", changed, err)
	}
	write("2")
	p2, changed, err := b.Update(ctx, "demo", "")
	if err != nil || !changed || p2.Version != "2" || p2.Hash == p.Hash {
		t.Fatalf("update: %+v %v %v", p2, changed, err)
	}
	os.WriteFile(filepath.Join(p2.Dir, "run"), []byte("#!/bin/sh\nrm -rf ~\n"), 0o755)
	if h, _ := Hash(p2.Dir); h == p2.Hash {
		t.Fatal("a tampered tree still matches")
	}
	if ch, _ := b.SetEnabled(ctx, "demo", false); !ch {
		t.Fatal("disable")
	}
	if ch, _ := b.SetEnabled(ctx, "demo", false); ch {
		t.Fatal("disable twice")
	}
	b.SetEnabled(ctx, "demo", true)

	// From git, pinned: a later commit does not move it until update.
	repo := t.TempDir()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(repo, ManifestFile), []byte("name: fromgit\ncommand: [x]\ntools: [t]\n"), 0o644)
	git("add", ".")
	git("commit", "--quiet", "-m", "one")
	c1 := git("rev-parse", "HEAD")
	os.WriteFile(filepath.Join(repo, "more"), []byte("x"), 0o644)
	git("add", ".")
	git("commit", "--quiet", "-m", "two")
	c2 := git("rev-parse", "HEAD")
	g, err := b.Install(ctx, repo, c1, true)
	if err != nil || g.Kind != "git" || g.Commit != c1 || g.Enabled {
		t.Fatalf("%+v %v", g, err)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "more")); err == nil {
		t.Fatal("the pinned commit has a file of a later one")
	}
	if _, err := os.Stat(filepath.Join(g.Dir, ".git")); err == nil {
		t.Fatal("the install kept .git")
	}
	g2, changed, err := b.Update(ctx, "fromgit", "")
	if err != nil || !changed || g2.Commit != c2 {
		t.Fatalf("update to the default branch: %+v %v", g2, err)
	}
	if _, err := b.Install(ctx, repo, "nope", false); err == nil || !strings.Contains(err.Error(), "no commit") {
		t.Fatalf("an unknown ref: %v", err)
	}
	// A source that looks like an option is a source, not an option.
	marker := filepath.Join(t.TempDir(), "ran")
	if _, err := b.Install(ctx, "--upload-pack=touch "+marker, "main", false); err == nil || !strings.Contains(err.Error(), "'--upload-pack=touch") {
		t.Fatalf("an option as a source: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a source ran as a git option")
	}
	if err := b.Remove(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	all, _, _ := b.List(ctx)
	if len(all) != 1 || all[0].Name != "fromgit" {
		t.Fatalf("%+v", all)
	}
	rs, _ := store.ReadStream(ctx, Stream, 0, 0, 0)
	var types []string
	for _, r := range rs {
		types = append(types, r.Type)
	}
	want := "PluginInstalled PluginUpdated PluginDisabled PluginEnabled PluginInstalled PluginUpdated PluginRemoved"
	if strings.Join(types, " ") != want {
		t.Fatalf("events: %v", types)
	}
	var up schema.PluginUpdated
	json.Unmarshal(rs[5].Payload, &up)
	if up.FromCommit != c1 || up.Commit != c2 {
		t.Fatalf("%+v", up)
	}
}

// startPlugin installs and starts the Go test plugin, sandboxed, and
// returns its host.
func startPlugin(tb testing.TB, hk *hooks.Runner) *Host {
	tb.Helper()
	store, err := embedded.Open(filepath.Join(tb.TempDir(), "events.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	home := outsideTmp(tb)
	b := &Book{Store: store, Dir: filepath.Join(home, "plugins")}
	if _, err := b.Install(context.Background(), goPlugin(tb), "", false); err != nil {
		tb.Fatal(err)
	}
	exe, _ := os.Executable()
	pol := sandbox.Defaults(os.Getenv("HOME"), home)
	os.Setenv(launcherEnv, "1")
	tb.Cleanup(func() { os.Unsetenv(launcherEnv) })
	h, err := Start(context.Background(), b, Options{Exe: exe, Policy: &pol, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	if hk != nil {
		if err := h.RegisterHooks(hk); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

func toolNamed(tb testing.TB, src *Source, name string) tool.Tool {
	tb.Helper()
	src.Wait()
	for _, t := range src.Tools() {
		if t.Spec().Name == name {
			return t
		}
	}
	tb.Fatalf("no tool %s (state %+v)", name, src.r.Server.Status())
	return nil
}

// TestCrashAndHangAreIsolated: a plugin that exits mid-call or never
// answers costs that call an error; the plugin is started again and
// answers the next one; a hook of a plugin that hangs times out.
func TestCrashAndHangAreIsolated(t *testing.T) {
	hk, _ := hooks.New(nil, hooks.Options{})
	h := startPlugin(t, hk)
	src := h.Toolsets(nil)[ServerName("wordcount")]
	count := toolNamed(t, src, "word_count")
	if out, err := count.Run(context.Background(), json.RawMessage(`{"text":"a b c"}`)); err != nil || out != "3 words" {
		t.Fatalf("%q %v", out, err)
	}
	if _, err := toolNamed(t, src, "crash").Run(context.Background(), json.RawMessage(`{}`)); err == nil {
		t.Fatal("a crash answered")
	}
	start := time.Now()
	if _, err := toolNamed(t, src, "hang").Run(context.Background(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("a hang: %v", err)
	} else if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the hang took %s (timeout 3s)", d)
	}
	if out, err := count.Run(context.Background(), json.RawMessage(`{"text":"back again"}`)); err != nil || out != "2 words" {
		t.Fatalf("after the crash: %q %v", out, err)
	}
	if st := h.Plugins()[0].Server.Status(); st.State != mcp.Connected {
		t.Fatalf("state %+v", st)
	}
	// The plugin's pre_tool_call hook, through the runner.
	term := hk.Tool(fakeTerminal{})
	if _, err := term.Run(context.Background(), json.RawMessage(`{"command":"cat /etc/shadow"}`)); err == nil || !strings.Contains(err.Error(), "keeps terminal away") {
		t.Fatalf("the plugin's hook did not block: %v", err)
	}
}

type fakeTerminal struct{}

func (fakeTerminal) Spec() model.ToolSpec { return model.ToolSpec{Name: "terminal"} }
func (fakeTerminal) Flags() tool.Flags    { return tool.Flags{} }
func (fakeTerminal) Run(context.Context, json.RawMessage) (string, error) {
	return "ran\n[exit code: 0]", nil
}

// builtinCount is word_count as a built-in tool: the baseline.
type builtinCount struct{}

func (builtinCount) Spec() model.ToolSpec { return model.ToolSpec{Name: "word_count"} }
func (builtinCount) Flags() tool.Flags    { return tool.Flags{ReadOnly: true} }
func (builtinCount) Run(_ context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d words", len(strings.Fields(in.Text))), nil
}

// BenchmarkToolCall compares one word_count call through the path the
// agent loop takes (tool.RunTool) as a built-in tool, as the same Go
// program run as a plain MCP stdio server (no sandbox), and as a plugin
// (the launcher relaying stdio into the program in its sandbox).
//
//	go test -run '^$' -bench ToolCall -benchtime 2s ./adapters/plugins/
func BenchmarkToolCall(b *testing.B) {
	bench := func(b *testing.B, tl tool.Tool) {
		ctx := context.Background()
		call := tool.Call{ID: "c", Name: tl.Spec().Name, Args: json.RawMessage(`{"text":"one two three"}`), Tool: tl}
		if r := tool.RunTool(ctx, call, time.Minute); r.Err != "" || r.Content != "3 words" {
			b.Fatal(r.Err, r.Content)
		}
		b.ResetTimer()
		for range b.N {
			if r := tool.RunTool(ctx, call, time.Minute); r.Err != "" {
				b.Fatal(r.Err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	b.Run("builtin", func(b *testing.B) { bench(b, builtinCount{}) })
	b.Run("mcp-stdio", func(b *testing.B) {
		dir := goPlugin(b)
		s := mcp.NewServer("wc", mcp.ServerConfig{Command: filepath.Join(dir, "wordcount")}, &mcp.Options{Log: zerolog.Nop()})
		s.Start()
		b.Cleanup(func() { s.Close() })
		s.Wait()
		for _, t := range s.Tools() {
			if t.Spec().Name == mcp.ToolName("wc", "word_count") {
				bench(b, t)
				return
			}
		}
		b.Fatalf("no tool: %+v", s.Status())
	})
	b.Run("plugin", func(b *testing.B) {
		h := startPlugin(b, nil)
		bench(b, toolNamed(b, h.Toolsets(nil)[ServerName("wordcount")], "word_count"))
	})
}
