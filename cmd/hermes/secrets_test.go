package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events/embedded"
)

// Fake keys, long enough to be known by value.
const (
	fakeOpenAI = "sk-test-e2e-0123456789abcdefXYZ"
	fakeGitHub = "ghp_E2eFakeTokenAbCdEfGhIjKlMnOpQrStUv"
	fakeProj   = "sk-proj-Printed0123456789AbCdEfGhIjKl"
)

// toolResults are the contents of the tool messages the model was sent.
func toolResults(srv *llmtest.Server) string {
	var b strings.Builder
	for _, r := range srv.Requests() {
		msgs, _ := r.Body["messages"].([]any)
		for _, m := range msgs {
			if mm := m.(map[string]any); mm["role"] == "tool" {
				fmt.Fprintln(&b, mm["content"])
			}
		}
	}
	return b.String()
}

// TestSecretsReachNeitherTheModelNorTheLog: a terminal `env` sent
// OPENAI_API_KEY to the model and into events, projections, the index
// and exports. Now child processes do not get it, and whatever a tool
// prints of a key is redacted before it is recorded.
func TestSecretsReachNeitherTheModelNorTheLog(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "a", Name: "terminal", Args: `{"command":"env"}`},
			{ID: "b", Name: "terminal", Args: `{"command":"echo \"key=$OPENAI_API_KEY gh=$GITHUB_TOKEN\""}`},
			{ID: "c", Name: "terminal", Args: `{"command":"printf 'printed ` + fakeProj + `\\n'"}`},
			{ID: "d", Name: "execute_code", Args: `{"code":"import os\nprint('py', os.environ.get('OPENAI_API_KEY'), os.environ.get('GITHUB_TOKEN'))"}`},
		}},
		llmtest.Reply{Content: "done"},
	)
	defer srv.Close()
	home := t.TempDir()
	// GITHUB_TOKEN is passed through to commands on purpose: the model
	// still never reads it.
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("terminal:\n  env_passthrough: [GITHUB_TOKEN]\n"), 0o600)
	env := chatEnv(srv, "OPENAI_API_KEY="+fakeOpenAI, "GITHUB_TOKEN="+fakeGitHub)
	out, errOut, code := hermesIn(t, t.TempDir(), env, "", "--home", home, "chat", "--model", "m", "-q", "show the environment")
	if code != 0 || out != "done\n" {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	results := toolResults(srv)
	for _, want := range []string{"PATH=", "key= gh=[REDACTED:GITHUB_TOKEN]", "printed [REDACTED:openai-key]", "py None [REDACTED:GITHUB_TOKEN]"} {
		if !strings.Contains(results, want) {
			t.Fatalf("tool results lack %q:\n%s", want, results)
		}
	}
	for _, secret := range []string{fakeOpenAI, fakeGitHub, fakeProj, "OPENAI_API_KEY="} {
		if strings.Contains(results, secret) {
			t.Fatalf("the model read %s:\n%s", secret, results)
		}
	}
	// Build the search index too, then look at every byte of the home.
	if _, errOut, err := run(t, home, "search", "printed"); err != nil {
		t.Fatalf("search: %v %s", err, errOut)
	}
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.ReadAll(context.Background(), 0, 0)
	s.Close()
	if err != nil || len(all) == 0 {
		t.Fatalf("%d events: %v", len(all), err)
	}
	var recorded strings.Builder
	for _, r := range all {
		if r.Type == "ToolResultAdded" {
			recorded.Write(r.Payload)
		}
	}
	if n := strings.Count(recorded.String(), "REDACTED"); n < 3 {
		t.Fatalf("the recorded tool results are not the redacted ones:\n%s", recorded.String())
	}
	// The printf command itself holds its key (the model wrote it); its
	// output does not.
	if strings.Contains(recorded.String(), fakeProj) {
		t.Fatalf("a recorded tool result holds the printed key:\n%s", recorded.String())
	}
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, secret := range []string{fakeOpenAI, fakeGitHub} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds %s", p, secret)
			}
		}
		return nil
	})
}

// sleepers are the pids of live processes running `sleep <arg>`.
func sleepers(arg string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscan(d.Name(), &pid); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if string(cmdline) == "sleep\x00"+arg+"\x00" && !bytes.Contains(stat[bytes.LastIndexByte(stat, ')')+1:], []byte(" Z ")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestBackgroundProcessesEndWithHermes: a server started with
// background=true outlived hermes; now its whole process group ends when
// hermes does.
func TestBackgroundProcessesEndWithHermes(t *testing.T) {
	a, b := fmt.Sprint(3000+time.Now().UnixNano()%997), fmt.Sprint(5000+time.Now().UnixNano()%991)
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "bg", Name: "terminal", Args: `{"command":"(sleep ` + a + ` &); sleep ` + b + `","background":true}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "ls", Name: "process", Args: `{"action":"list"}`}}},
		llmtest.Reply{Content: "server started"},
	)
	defer srv.Close()
	home := t.TempDir()
	t.Cleanup(func() {
		for _, pid := range append(sleepers(a), sleepers(b)...) {
			syscallKill(pid)
		}
	})
	out, errOut, code := hermesIn(t, t.TempDir(), chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "start the server")
	if code != 0 || out != "server started\n" {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	if !strings.Contains(toolResults(srv), "proc_1  running") {
		t.Fatalf("the background command was not running:\n%s", toolResults(srv))
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && len(sleepers(a))+len(sleepers(b)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	if left := append(sleepers(a), sleepers(b)...); len(left) > 0 {
		t.Fatalf("background processes outlived hermes: %v", left)
	}
}

// TestHomeAndExecuteCodeThroughTheCLI: the red team's writes into
// $HERMES_HOME are refused, and execute_code is not offered when the
// terminal is disabled.
func TestHomeAndExecuteCodeThroughTheCLI(t *testing.T) {
	home := t.TempDir()
	cfg := "tools:\n  disabled_toolsets: [terminal]\n"
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(home, "config.yaml"), "content": "command_allowlist: [recursive delete]\n"})
	wipe, _ := json.Marshal(map[string]string{"path": filepath.Join(home, "events.db"), "content": ""})
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w", Name: "write_file", Args: string(args)}, {ID: "x", Name: "write_file", Args: string(wipe)}}},
		llmtest.Reply{Content: "could not"},
	)
	defer srv.Close()
	out, errOut, code := hermesIn(t, t.TempDir(), chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "allow rm -rf for good")
	if code != 0 || out != "could not\n" {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(got) != cfg {
		t.Fatalf("config.yaml written by the model:\n%s", got)
	}
	// Refused by the sandbox's rules (the home is hidden from the file
	// tools), or, without a sandbox, by the home's own rule.
	if results := toolResults(srv); strings.Count(results, "hidden from the agent")+strings.Count(results, "may not change") != 2 {
		t.Fatalf("tool results:\n%s", results)
	}
	if info, err := os.Stat(filepath.Join(home, "events.db")); err != nil || info.Size() == 0 {
		t.Fatalf("events.db wiped: %v", err)
	}
	first := srv.Requests()[0]
	if offers(first, "terminal") || offers(first, "execute_code") || !offers(first, "write_file") {
		t.Fatal("execute_code offered without the terminal")
	}
	list := mustRun(t, home, "tools", "list")
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "execute_code" && f[2] != "no" {
			t.Fatalf("tools list shows execute_code on:\n%s", list)
		}
	}
}

func syscallKill(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

func TestEnvPassthroughConfig(t *testing.T) {
	load := func(yml string) (config.Resolved, error) {
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\n"+yml), 0o600)
		c, err := config.Load(home)
		if err != nil {
			return config.Resolved{}, err
		}
		return config.Resolve(home, c, config.Overrides{})
	}
	r, err := load("terminal:\n  env_passthrough: [GITHUB_TOKEN, \"NPM_*\"]\n")
	if err != nil || strings.Join(r.EnvPassthrough, ",") != "GITHUB_TOKEN,NPM_*" {
		t.Fatalf("%v %v", r.EnvPassthrough, err)
	}
	for _, bad := range []string{"GITHUB_TOKEN", "[3]", "[\"[x\"]"} {
		if _, err := load("terminal:\n  env_passthrough: " + bad + "\n"); err == nil || !strings.Contains(err.Error(), "terminal.env_passthrough") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
