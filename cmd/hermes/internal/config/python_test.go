package config

import (
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPythonKeysUpToDate: python_keys.go is what testdata/python_keys.py
// prints from the Python Hermes Agent installed in HERMES_AGENT_VENV (run
// go generate after upgrading it).
func TestPythonKeysUpToDate(t *testing.T) {
	venv := os.Getenv("HERMES_AGENT_VENV")
	if venv == "" {
		t.Skip("HERMES_AGENT_VENV is not set: .ci/run installs hermes-agent==0.19.0 in .ci/hermes-venv and sets it")
	}
	out, err := exec.Command(filepath.Join(venv, "bin", "python"), filepath.Join("testdata", "python_keys.py")).Output()
	if err != nil {
		t.Fatalf("python_keys.py: %v", err)
	}
	want, err := format.Source(out)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile("python_keys.go")
	if string(got) != string(want) {
		t.Fatal("python_keys.go differs from what testdata/python_keys.py prints from the installed hermes-agent: run go generate ./cmd/hermes/internal/config/")
	}
}

// TestPythonKeys: the Python agent's keys load; those this build has a
// feature for are honoured (and not warned about) unless its own key is
// set; the others are ignored with one warning line naming them; a key
// neither has is refused with its line.
func TestPythonKeys(t *testing.T) {
	clean(t)
	c, err := Load(homeWith(t, `model:
  default: gpt-4o-mini
  provider: custom
  base_url: http://127.0.0.1:9/v1
  api_key: sk-in-config
  context_length: 64000
  max_tokens: 2048
agent:
  max_turns: 12
  reasoning_effort: high
compression:
  summary_model: cheap
  summary_provider: auto
delegation:
  max_spawn_depth: 1
  max_concurrent_children: 5
toolsets:
- hermes-cli
terminal:
  modal_mode: auto
  timeout: 60
fallback_providers:
- provider: openrouter
  model: m2
  api_key: sk-x
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKey != "sk-in-config" || c.ContextWindow != 64000 || c.Agent.MaxTokens != 2048 || c.Agent.MaxTurns != 12 ||
		c.Auxiliary.Compression.Name != "cheap" || c.Auxiliary.Compression.Provider != "" || c.Model.Name != "gpt-4o-mini" ||
		c.Delegation.MaxDepth != 1 || c.Delegation.MaxConcurrent != 5 {
		t.Fatalf("honoured: %+v", c)
	}
	want := []string{"agent.reasoning_effort", "compression.summary_provider", "toolsets", "terminal.modal_mode", "fallback_providers[0].api_key"}
	if !slices.Equal(c.Ignored(), want) {
		t.Fatalf("ignored %v, want %v", c.Ignored(), want)
	}
	if w := c.IgnoredWarning("config.yaml"); strings.Count(w, "\n") != 0 || !strings.Contains(w, "agent.reasoning_effort, compression.summary_provider") {
		t.Fatalf("warning %q", w)
	}
	r, err := Resolve(t.TempDir(), c, Overrides{})
	if err != nil || r.LLM.APIKey != "sk-in-config" || r.ContextWindow != 64000 || r.AuxModel != "cheap" {
		t.Fatalf("resolved %+v %v", r, err)
	}
	// This build's own keys win over the Python agent's.
	c, err = Load(homeWith(t, "api_key: sk-ours\ncontext_window: 1000\nmodel:\n  default: m\n  api_key: sk-theirs\n  context_length: 64000\n"))
	if err != nil || c.APIKey != "sk-ours" || c.ContextWindow != 1000 || len(c.Ignored()) != 0 {
		t.Fatalf("ours first: %+v %v", c, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"model: m\nagent:\n  reasoning_efort: high\n", "line 3: unknown key agent.reasoning_efort"},
		{"model: m\nnonsense:\n  x: 1\n", "line 2: unknown key nonsense: neither this build nor the Python Hermes Agent 0.19.0 has it"},
		{"model:\n  default: m\n  context_length: lots\n", "model:"},
	} {
		if _, err := Load(homeWith(t, bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%q: error %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

// TestAuthPoolKey: the pool's API key entry of the lowest priority that
// is not exhausted; OAuth entries, other providers and a malformed file
// give none.
func TestAuthPoolKey(t *testing.T) {
	home := t.TempDir()
	write := func(s string) { os.WriteFile(filepath.Join(home, "auth.json"), []byte(s), 0o600) }
	write(`{"version":1,"providers":{},"credential_pool":{"openrouter":[
{"auth_type":"oauth","access_token":"tok","priority":0},
{"auth_type":"api_key","access_token":"sk-2","priority":2},
{"auth_type":"api_key","access_token":"sk-0","priority":1,"last_status":"exhausted"},
{"auth_type":"api_key","access_token":"sk-1","priority":1}]}}`)
	if k := authPoolKey(home, "openrouter"); k != "sk-1" {
		t.Fatalf("key %q", k)
	}
	if k := authPoolKey(home, "anthropic"); k != "" {
		t.Fatalf("another provider's key %q", k)
	}
	write("{not json")
	if k := authPoolKey(home, "openrouter"); k != "" {
		t.Fatalf("malformed: %q", k)
	}
}
