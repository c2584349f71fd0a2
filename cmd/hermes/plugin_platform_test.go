package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// startPluginGateway runs `hermes gateway run` in work and waits until
// platform is connected in its status.
func startPluginGateway(t *testing.T, home, work, platform string, env []string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(bin, "--home", home, "--log-level", "info", "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env, cmd.Dir = env, work
	p := &gatewayProc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, _ := hermes(t, env, "", "--home", home, "gateway", "status", "--json")
		var st struct {
			Running bool
			Status  gatewayStatus
		}
		if json.Unmarshal([]byte(out), &st) == nil && st.Running && st.Status.PID == cmd.Process.Pid {
			for _, pl := range st.Status.Platforms {
				if pl.Platform == platform && pl.Connected {
					return p
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not connect %s in 60 s; status %s\nstderr:\n%s", platform, out, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outbox is what the filechat plugin sent, one object per line.
func outbox(t *testing.T, work string) []map[string]any {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(work, "outbox.jsonl"))
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// A plugin's gateway platform (the filechat test plugin: its chat is two
// files in the working directory, its receive and send are MCP tools run
// in its sandbox) carries a chat as a built-in platform does: an allowed
// user is answered, a stranger is not; and after a kill -9 the plugin,
// started again, offers the message again (it was acknowledged only in
// the plugin that died), and the gateway neither asks the model again nor
// answers twice.
func TestPluginGatewayPlatform(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "hermes-plugin-platform-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home, work, plug := filepath.Join(root, "home"), filepath.Join(root, "work"), filepath.Join(root, "filechat")
	for _, d := range []string{home, work, plug} {
		os.MkdirAll(d, 0o755)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(plug, "filechat"), "../../adapters/plugins/testdata/filechat").CombinedOutput(); err != nil {
		t.Fatalf("go build the plugin: %v\n%s", err, out)
	}
	copyFile(t, filepath.Join("..", "..", "adapters", "plugins", "testdata", "filechat", "hermes-plugin.yaml"), filepath.Join(plug, "hermes-plugin.yaml"))
	writeConfig(t, home, "model: gpt-4o-mini\n")
	if out := mustRun(t, home, "plugins", "install", plug); !strings.Contains(out, "installed filechat") {
		t.Fatalf("install: %s", out)
	}
	if out := mustRun(t, home, "plugins", "list"); !strings.Contains(out, "platforms filechat") {
		t.Fatalf("plugins list:\n%s", out)
	}
	srv := llmtest.New(llmtest.Reply{Content: "Hello from the model."})
	defer srv.Close()
	env := chatEnv(srv, "GATEWAY_ALLOWED_USERS=alice")
	g := startPluginGateway(t, home, work, "filechat", env)

	inbox := `{"chat":"room1","user":"alice","message_id":"m1","text":"hello"}` + "\n" +
		`{"chat":"room2","user":"mallory","message_id":"m2","text":"let me in"}` + "\n"
	if err := os.WriteFile(filepath.Join(work, "inbox.jsonl"), []byte(inbox), 0o644); err != nil {
		t.Fatal(err)
	}
	answered := func() (toAlice, toMallory []string) {
		for _, m := range outbox(t, work) {
			switch m["chat"] {
			case "room1":
				toAlice = append(toAlice, m["text"].(string))
			case "room2":
				toMallory = append(toMallory, m["text"].(string))
			}
		}
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for a, _ := answered(); len(a) == 0; a, _ = answered() {
		if time.Now().After(deadline) {
			t.Fatalf("no answer in the outbox; gateway stderr:\n%s", g.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // room for a wrong second answer
	g.kill()
	g = startPluginGateway(t, home, work, "filechat", env)
	time.Sleep(3 * time.Second) // the new plugin offers m1 and m2 again
	g.kill()
	toAlice, toMallory := answered()
	if len(toAlice) != 1 || strings.TrimSpace(toAlice[0]) != "Hello from the model." {
		t.Fatalf("alice was sent %q, want the answer once", toAlice)
	}
	for _, m := range toMallory {
		if strings.Contains(m, "Hello from the model.") {
			t.Fatalf("the stranger was answered by the model: %q", toMallory)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times, want 1", n)
	}
}
