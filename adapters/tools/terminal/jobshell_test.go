package terminal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// A cron script runs in a sandbox of its own: its working directory
// ($HERMES_HOME/scripts) is shown again inside the hidden home, the rest
// of the home stays hidden, and no key reaches its environment.
func TestScriptRunsInTheSandbox(t *testing.T) {
	if !sandbox.Probe().Enforced() {
		t.Fatalf("this machine cannot run the sandbox: %v", sandbox.Probe().Refusal())
	}
	home, err := os.MkdirTemp("/var/tmp", "hermes-cron-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	scripts := filepath.Join(home, "scripts")
	os.MkdirAll(scripts, 0o755)
	config := filepath.Join(home, "config.yaml")
	os.WriteFile(config, []byte("model: canary\n"), 0o644)
	t.Setenv("OPENAI_API_KEY", "sk-cron-canary-1234567890")
	p := sandbox.Defaults("", home)
	p.Visible = append(p.Visible, scripts)
	sh := terminal.JobShell{Dir: scripts, Sandboxes: &terminal.Sandboxes{Policy: p}}
	out, err := sh.Run(context.Background(), "echo report > out.txt; cat out.txt; env; cat ../config.yaml; echo 'command_allowlist: [x]' >> ../config.yaml; true")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "report") {
		t.Fatalf("the script did not run: %s", out)
	}
	if strings.Contains(out, "sk-cron-canary") || strings.Contains(out, "model: canary") {
		t.Fatalf("a secret reached the script: %s", out)
	}
	if b, _ := os.ReadFile(config); string(b) != "model: canary\n" {
		t.Fatalf("config.yaml changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(scripts, "out.txt")); string(b) != "report\n" {
		t.Fatalf("the scripts directory was not writable: %q", b)
	}
}
