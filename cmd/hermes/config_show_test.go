package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// Which of the flag, the environment, config.yaml and the default wins,
// checked through the command layer (cmd/hermes/internal/config's tests
// check each setting's resolution).
func TestConfigPrecedenceInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: file-model\nstore: embedded\nagent:\n  max_turns: 12\n"), 0o600)
	line := func(out, key string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, key+":") {
				return strings.TrimSpace(strings.TrimPrefix(l, key+":"))
			}
		}
		t.Fatalf("no %s in:\n%s", key, out)
		return ""
	}
	out, _, err := inHome(t, home, "config", "show")
	if err != nil {
		t.Fatal(err)
	}
	if line(out, "model") != "file-model" || line(out, "agent.max_turns") != "12" || line(out, "store") != "embedded" {
		t.Fatalf("config.yaml not in effect:\n%s", out)
	}
	t.Setenv("HERMES_MODEL", "env-model")
	t.Setenv("HERMES_STORE", "postgres://hermes:hunter2@db/hermes")
	out, _, err = inHome(t, home, "config", "show")
	if err != nil {
		t.Fatal(err)
	}
	if line(out, "model") != "env-model" || !strings.Contains(line(out, "store"), "from $HERMES_STORE") || strings.Contains(out, "hunter2") {
		t.Fatalf("the environment does not beat config.yaml:\n%s", out)
	}
	// --store beats HERMES_STORE, which beats config.yaml; a bad one names
	// where it came from.
	t.Setenv("HERMES_STORE", "nosuch://x")
	if _, _, err := inHome(t, home, "sessions", "list"); err == nil || !strings.HasPrefix(err.Error(), "HERMES_STORE: unknown store") {
		t.Fatalf("a bad HERMES_STORE: %v", err)
	}
	if out, _, err := inHome(t, home, "--store", "embedded", "sessions", "list"); err != nil || out != "no sessions yet\n" {
		t.Fatalf("--store over HERMES_STORE: %q %v", out, err)
	}
	t.Setenv("HERMES_STORE", "")
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("store: nosuch://x\n"), 0o600)
	if _, _, err := inHome(t, home, "sessions", "list"); err == nil || !strings.Contains(err.Error(), "store in "+filepath.Join(home, "config.yaml")) {
		t.Fatalf("a bad store in config.yaml: %v", err)
	}
	// --home beats HERMES_HOME.
	other := t.TempDir()
	t.Setenv("HERMES_HOME", other)
	if out, _, err := execute(t, "", "config", "path"); err != nil || out != filepath.Join(other, "config.yaml")+"\n" {
		t.Fatalf("HERMES_HOME: %q %v", out, err)
	}
	if out, _, err := inHome(t, home, "config", "path"); err != nil || out != filepath.Join(home, "config.yaml")+"\n" {
		t.Fatalf("--home over HERMES_HOME: %q %v", out, err)
	}
}

// The model a chat asks for: --model, else HERMES_MODEL, else config.yaml,
// through the command layer to the provider's request.
func TestModelPrecedenceThroughChatInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "ok"})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: file-model\n"), 0o600)
	asked := func(args ...string) string {
		t.Helper()
		out, errOut, err := inHome(t, home, append([]string{"chat", "-q", "hi", "--quiet"}, args...)...)
		if err != nil || out != "ok\n" {
			t.Fatalf("chat: %q %v\n%s", out, err, errOut)
		}
		reqs := srv.Requests()
		m, _ := reqs[len(reqs)-1].Body["model"].(string)
		return m
	}
	if m := asked(); m != "file-model" {
		t.Fatalf("config.yaml's model: asked for %q", m)
	}
	t.Setenv("HERMES_MODEL", "env-model")
	if m := asked(); m != "env-model" {
		t.Fatalf("HERMES_MODEL over config.yaml: asked for %q", m)
	}
	if m := asked("--model", "flag-model"); m != "flag-model" {
		t.Fatalf("--model over HERMES_MODEL: asked for %q", m)
	}
}
