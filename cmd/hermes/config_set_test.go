package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// config set keeps the file's comments and other keys, and refuses keys
// and values this build would not accept.
func TestConfigSetShowPath(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	os.WriteFile(path, []byte("# mine\nmodel: gpt-4o-mini  # default model\nagent:\n  max_turns: 50\n"), 0o600)
	if out := mustRun(t, home, "config", "path"); strings.TrimSpace(out) != path {
		t.Fatalf("path %q", out)
	}
	mustRun(t, home, "config", "set", "agent.max_turns", "40")
	mustRun(t, home, "config", "set", "tools.disabled_tools", "[terminal, execute_code]")
	data, _ := os.ReadFile(path)
	for _, want := range []string{"# mine", "# default model", "max_turns: 40", "disabled_tools: [terminal, execute_code]"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("config.yaml lacks %q:\n%s", want, data)
		}
	}
	if _, errOut, err := run(t, home, "config", "set", "tools.disabled_tool", "[terminal]"); err == nil || !strings.Contains(errOut, "did you mean tools.disabled_tools") {
		t.Fatalf("misspelt key: %v %s", err, errOut)
	}
	if _, errOut, err := run(t, home, "config", "set", "--", "context_window", "-100"); err == nil || !strings.Contains(errOut, "context_window") {
		t.Fatalf("bad value: %v %s", err, errOut)
	}
	if _, errOut, err := run(t, home, "config", "set", "agent.max_turns", "many"); err == nil {
		t.Fatalf("a word for a number: %v %s", err, errOut)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(data) {
		t.Fatalf("a refused set changed the file:\n%s", after)
	}
	out, _, err := run(t, home, "config", "show")
	if err != nil || !strings.Contains(out, "agent.max_turns:") || !strings.Contains(out, "40") {
		t.Fatalf("show: %v\n%s", err, out)
	}
}

// setup asks for provider, base URL and model, tests them with a real call,
// and writes config.yaml and .env; the next chat uses them (and the key
// from .env).
func TestSetupWizardThenChat(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "OK"}, llmtest.Reply{Content: "Paris."})
	defer srv.Close()
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, errOut, code := hermes(t, env, "openrouter\n"+srv.URL+"/v1\nmy-model\nsk-or-test-key-123\n", "--home", home, "setup")
	if code != 0 || !strings.Contains(out, "wrote") || !strings.Contains(errOut, "ok") {
		t.Fatalf("setup: %d %s %s", code, out, errOut)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-or-test-key-123" {
		t.Fatalf("test call's key %q", got)
	}
	dotenv, _ := os.ReadFile(filepath.Join(home, ".env"))
	if fi, _ := os.Stat(filepath.Join(home, ".env")); !strings.Contains(string(dotenv), "OPENROUTER_API_KEY=sk-or-test-key-123") || fi.Mode().Perm() != 0o600 {
		t.Fatalf(".env %q", dotenv)
	}
	out, errOut, code = hermes(t, env, "", "--home", home, "chat", "-q", "capital of France?")
	if code != 0 || out != "Paris.\n" {
		t.Fatalf("chat after setup: %d %q %s", code, out, errOut)
	}
	req := srv.Requests()[1]
	if req.Body["model"] != "my-model" || req.Header.Get("Authorization") != "Bearer sk-or-test-key-123" {
		t.Fatalf("chat used %v with %q", req.Body["model"], req.Header.Get("Authorization"))
	}
	// A failing test call writes nothing.
	home2 := t.TempDir()
	_, errOut, code = hermes(t, env, "local\nhttp://127.0.0.1:1/v1\nm\n", "--home", home2, "setup")
	if code == 0 || !strings.Contains(errOut, "test call failed") {
		t.Fatalf("unreachable server: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(home2, "config.yaml")); err == nil {
		t.Fatal("config.yaml written after a failed test")
	}
}

// doctor names what is wrong and how to fix it, and exits 1.
func TestDoctor(t *testing.T) {
	// an OpenAI-compatible server's model list
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
	}))
	defer srv.Close()
	chatEnv := func(*httptest.Server) []string {
		return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"}
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\n"), 0o644)
	out, _, code := hermes(t, chatEnv(srv), "", "--home", home, "doctor")
	if code != 0 || !strings.Contains(out, "✓ provider") || !strings.Contains(out, "chmod 600") {
		t.Fatalf("doctor on a good home: %d\n%s", code, out)
	}
	out, _, code = hermes(t, []string{"PATH=" + os.Getenv("PATH"), "OPENAI_BASE_URL=http://127.0.0.1:1/v1", "OPENAI_API_KEY=x"}, "", "--home", home, "doctor")
	if code != 1 || !strings.Contains(out, "✗ provider") || !strings.Contains(out, "is the server running") {
		t.Fatalf("doctor with the server down: %d\n%s", code, out)
	}
	out, _, code = hermes(t, []string{"PATH=" + os.Getenv("PATH"), "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=wrong"}, "", "--home", home, "doctor")
	if code != 1 || !strings.Contains(out, "key was refused") {
		t.Fatalf("doctor with a wrong key: %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nagent:\n  max_turn: 3\n"), 0o600)
	out, _, code = hermes(t, chatEnv(srv), "", "--home", home, "doctor")
	if code != 1 || !strings.Contains(out, "did you mean agent.max_turns") {
		t.Fatalf("doctor with a bad key: %d\n%s", code, out)
	}
}

// GATEWAY_BUS sets gateway.bus (the way a container is configured), over
// config.yaml.
func TestGatewayBusFromTheEnvironment(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("gateway:\n  bus: nats://file:4222\n"), 0o600)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, errOut, code := hermes(t, env, "", "--home", home, "config", "show")
	if code != 0 || !strings.Contains(out, "nats://file:4222") {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
	out, errOut, code = hermes(t, append(env, "GATEWAY_BUS=nats://nats:4222"), "", "--home", home, "config", "show")
	if code != 0 || !strings.Contains(out, "nats://nats:4222") || strings.Contains(out, "nats://file:4222") {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
}

// doctor's advice for a missing model is one that works: `config set
// model NAME` on a model: mapping without a name sets its default and
// keeps the provider and base URL, and the next doctor finds the model on
// that provider.
func TestDoctorModelAdviceKeepsProviderInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	os.WriteFile(path, []byte("# my provider\nmodel:\n  provider: openrouter\n  base_url: http://127.0.0.1:9/v1  # local proxy\n"), 0o600)
	out, _, _ := inHome(t, home, "doctor")
	if !strings.Contains(out, "hermes config set model NAME") {
		t.Fatalf("doctor gives no model advice:\n%s", out)
	}
	if _, _, err := inHome(t, home, "config", "set", "model", "my-model"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"# my provider", "default: my-model", "provider: openrouter", "base_url: http://127.0.0.1:9/v1", "# local proxy"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, data)
		}
	}
	out, _, _ = inHome(t, home, "doctor")
	if !strings.Contains(out, "my-model (openrouter") || strings.Contains(out, "hermes config set model NAME") {
		t.Fatalf("doctor after the advice:\n%s", out)
	}
}
