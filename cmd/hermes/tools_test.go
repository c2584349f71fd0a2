package main

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/browser"
)

func TestApprovalFromTheCLI(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "I was not allowed to delete build."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t2", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Deleted."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t3", Name: "terminal", Args: `{"command":"rm -rf /"}`}}},
		llmtest.Reply{Content: "Refused."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t4", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Deleted again."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t5", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Not allowed any more."},
	)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(home, "config.yaml")
	os.WriteFile(cfgPath, []byte(handConfig), 0o600)
	os.MkdirAll(filepath.Join(wd, "build", "obj"), 0o755)
	run := func(stdin string, args ...string) (string, string, int) {
		cmd := append([]string{"--home", home, "chat", "--model", "m", "-q"}, args...)
		return hermesIn(t, wd, chatEnv(srv), stdin, cmd...)
	}
	out, errOut, code := run("deny\n", "clean the build")
	if code != 0 || !strings.Contains(errOut, "flagged as recursive delete") || !strings.Contains(out, "not allowed") {
		t.Fatalf("deny: %d %q %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err != nil {
		t.Fatal("a denied command ran")
	}
	denied := srv.Requests()[1].Body["messages"].([]any)
	if c := denied[len(denied)-1].(map[string]any)["content"].(string); !strings.Contains(c, "denied by the user") {
		t.Fatalf("tool result %q", c)
	}
	out, errOut, code = run("always\n", "clean the build, please")
	if code != 0 || out != "Deleted.\n" {
		t.Fatalf("always: %d %q %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err == nil {
		t.Fatal("an approved command did not run")
	}
	// "always" is a grant in the event store: config.yaml is not written.
	if cfg, _ := os.ReadFile(cfgPath); string(cfg) != handConfig {
		t.Fatalf("config.yaml after always:\n%s", cfg)
	}
	if out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "approvals", "list"); code != 0 || !grantListed(out, "recursive-delete", "user") {
		t.Fatalf("approvals list: %d %s %s", code, out, errOut)
	}
	out, errOut, code = run("", "wipe the disk", "--yolo")
	if code != 0 || out != "Refused.\n" {
		t.Fatalf("hardline: %d %q %s", code, out, errOut)
	}
	last := srv.Requests()[5].Body["messages"].([]any)
	if c := last[len(last)-1].(map[string]any)["content"].(string); !strings.Contains(c, "never allowed") {
		t.Fatalf("hard-line result %q", c)
	}
	ev, _, _ := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "list", "--json")
	if !strings.Contains(ev, "clean the build") {
		t.Fatal(ev)
	}
	// A later process runs it without a question, until it is revoked.
	os.MkdirAll(filepath.Join(wd, "build", "obj"), 0o755)
	out, errOut, code = run("", "clean the build again")
	if code != 0 || out != "Deleted again.\n" || strings.Contains(errOut, "flagged") {
		t.Fatalf("granted: %d %q %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err == nil {
		t.Fatal("a granted command did not run")
	}
	if _, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "approvals", "revoke", "recursive delete"); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	os.MkdirAll(filepath.Join(wd, "build", "obj"), 0o755)
	out, errOut, code = run("deny\n", "and once more")
	if code != 0 || !strings.Contains(errOut, "flagged as recursive delete") || out != "Not allowed any more.\n" {
		t.Fatalf("revoked: %d %q %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err != nil {
		t.Fatal("a revoked grant still let the command run")
	}
}

func hermesIn(t *testing.T, dir string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	old, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(old)
	return hermes(t, env, stdin, args...)
}

func TestClarifyInInteractiveChat(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "q", Name: "clarify", Args: `{"question":"Which language?","choices":["Go","Rust"]}`}}},
		llmtest.Reply{Content: "Go it is."},
	)
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "write a hello world\nGo\n/exit\n", "--home", home, "chat", "--model", "m")
	if code != 0 || !strings.Contains(out, "Go it is.") || !strings.Contains(errOut, "? Which language?") || !strings.Contains(errOut, "[Go / Rust]") {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	msgs := srv.Requests()[1].Body["messages"].([]any)
	if c := msgs[len(msgs)-1].(map[string]any)["content"]; c != "The user answered: Go" {
		t.Fatalf("clarify result %v", c)
	}
}

func TestToolsList(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("tools:\n  disabled_toolsets: [memory]\n  disabled_tools: [\"write_*\"]\n"), 0o600)
	out := mustRun(t, home, "tools", "list")
	for _, want := range []string{"terminal", "read_file", "memory", "clarify", "execute_code", "skill_manage", "web tools are off: set web.search_url"} {
		if !strings.Contains(out, want) {
			t.Fatalf("tools list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "web_search") {
		t.Fatal("web_search listed without a provider")
	}
	line := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[1] == name {
				return f[2]
			}
		}
		return ""
	}
	if line("memory") != "no" || line("write_file") != "no" || line("read_file") != "yes" || line("terminal") != "yes" {
		t.Fatalf("selection not applied:\n%s", out)
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("tools:\n  disabled_tools: [\"[oops\"]\n"), 0o600)
	if _, errOut, err := run(t, home, "tools", "list"); err == nil || !strings.Contains(errOut, "tools.disabled_tools") {
		t.Fatalf("bad pattern: %v %s", err, errOut)
	}
}

func TestSkillsCommandsAndIndex(t *testing.T) {
	home, src := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: deploy-site\ndescription: Build and upload the static site\n---\n1. make\n2. rsync\n"), 0o644)
	if out := mustRun(t, home, "skills", "install", src); !strings.Contains(out, "installed deploy-site") {
		t.Fatal(out)
	}
	// A second install does not overwrite the installed copy unless forced.
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: deploy-site\ndescription: Build and upload the static site\n---\n1. make\n2. rsync\n3. purge the CDN\n"), 0o644)
	if _, errOut, err := run(t, home, "skills", "install", src); err == nil || !strings.Contains(errOut, "--force") {
		t.Fatalf("overwrote without --force: %v %s", err, errOut)
	}
	if out := mustRun(t, home, "skills", "show", "deploy-site"); strings.Contains(out, "purge") {
		t.Fatal("the installed skill changed")
	}
	mustRun(t, home, "skills", "install", "--force", src)
	if out := mustRun(t, home, "skills", "show", "deploy-site"); !strings.Contains(out, "3. purge the CDN") {
		t.Fatalf("--force did not replace it:\n%s", out)
	}
	if out := mustRun(t, home, "skills", "list"); !strings.Contains(out, "deploy-site") || !strings.Contains(out, "Build and upload") {
		t.Fatal(out)
	}
	if out := mustRun(t, home, "skills", "show", "deploy-site"); !strings.Contains(out, "2. rsync") {
		t.Fatal(out)
	}
	if _, errOut, err := run(t, home, "skills", "show", "nope"); err == nil || !strings.Contains(errOut, `no skill "nope"`) {
		t.Fatal(errOut)
	}
	srv := llmtest.New(llmtest.Reply{Content: "ok"})
	defer srv.Close()
	hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "hi")
	sys := srv.Requests()[0].Body["messages"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(sys, "- deploy-site: Build and upload the static site") {
		t.Fatalf("skills index missing from the system prompt:\n%s", sys)
	}
}

// TestBrowserTools: with Chromium installed the browser toolset is on by
// default (as upstream's is) and a chat drives a real browser, in the
// session's sandbox, through the model's tool calls; no browser outlives
// the chat. Without Chromium the tools are not offered and `tools list`
// says what to install.
func TestBrowserTools(t *testing.T) {
	if _, err := browser.FindChromium(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (.ci/run installs Debian's chromium)", err)
		}
		t.Skip(err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/order" {
			r.ParseForm()
			fmt.Fprintf(w, `<!doctype html><title>Done</title><h1>Ordered: %s</h1>`, html.EscapeString(r.FormValue("item")))
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Shop</title><h1>Price list</h1><form action="/order" method="post">`+
			`<label for="i">Item</label><input id="i" name="item"><button>Buy</button></form>`)
	}))
	defer page.Close()
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "b1", Name: "browser_navigate", Args: `{"url":"` + page.URL + `"}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "b2", Name: "browser_type", Args: `{"ref":"@e1","text":"kettle"}`},
			{ID: "b3", Name: "browser_click", Args: `{"ref":"@e2"}`}}},
		llmtest.Reply{Content: "The page lists prices; I ordered the kettle."},
	)
	defer srv.Close()
	before := browserProcs()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "order a kettle from the page\n/exit\n", "--home", home, "chat", "--model", "m")
	if code != 0 || !strings.Contains(out, "I ordered the kettle.") {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if !offers(reqs[0], "browser_navigate") || !offers(reqs[0], "browser_snapshot") || !offers(reqs[0], "browser_vision") {
		t.Fatalf("browser tools not offered: %v", reqs[0].Body["tools"])
	}
	msgs := reqs[1].Body["messages"].([]any)
	result, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	for _, want := range []string{"Navigated to " + page.URL, `- heading "Price list"`, `- textbox "Item" [ref=e1]`, `- button "Buy" [ref=e2]`} {
		if !strings.Contains(result, want) {
			t.Fatalf("browser_navigate's result lacks %q:\n%s", want, result)
		}
	}
	// The type and the click of one response ran in that order.
	msgs = reqs[2].Body["messages"].([]any)
	result, _ = msgs[len(msgs)-1].(map[string]any)["content"].(string)
	for _, want := range []string{"Clicked @e2 button", "/order — Done", `- heading "Ordered: kettle"`} {
		if !strings.Contains(result, want) {
			t.Fatalf("browser_click's result lacks %q:\n%s", want, result)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := newProcs(before); len(left) > 0; left = newProcs(before) {
		if time.Now().After(deadline) {
			t.Fatalf("browser processes outlived the chat: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}

	out = mustRun(t, home, "tools", "list")
	if !strings.Contains(out, "browser_navigate") || strings.Contains(out, "browser tools are off") {
		t.Fatalf("tools list with Chromium:\n%s", out)
	}
	cmd := exec.Command(bin, "--home", home, "tools", "list")
	cmd.Env = append(os.Environ(), "HERMES_CHROMIUM=/nonexistent/chromium")
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if out := string(b); strings.Contains(out, "browser_navigate") || !strings.Contains(out, "apt-get install chromium") {
		t.Fatalf("tools list without Chromium:\n%s", out)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	if out, _, _ := hermes(t, env, "", "--home", home, "doctor", "--offline"); !strings.Contains(out, "✓ browser") {
		t.Fatalf("doctor with Chromium:\n%s", out)
	}
	if out, _, _ := hermes(t, append(env, "HERMES_CHROMIUM=/nonexistent/chromium"), "", "--home", home, "doctor", "--offline"); !strings.Contains(out, "apt-get install chromium") {
		t.Fatalf("doctor without Chromium:\n%s", out)
	}
}

// browserProcs lists the processes a Hermes browser started (they carry
// HERMES_BROWSER_MARK in their environment).
func browserProcs() map[int]bool {
	out := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && bytes.Contains(env, []byte("HERMES_BROWSER_MARK=")) {
			out[pid] = true
		}
	}
	return out
}

func newProcs(before map[int]bool) []int {
	var out []int
	for pid := range browserProcs() {
		if !before[pid] {
			out = append(out, pid)
		}
	}
	return out
}
