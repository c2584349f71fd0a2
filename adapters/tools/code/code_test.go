package code

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	toolport "github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/files"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/schema"
)

func setup(t *testing.T) (*Tool, context.Context, string) {
	wd := t.TempDir()
	ts := append(files.Tools(files.Roots{}), terminal.Tools(terminal.Config{})...)
	tool := &Tool{Toolbox: toolport.NewTools(ts...), Timeout: 20 * time.Second}
	ctx := toolport.WithEnv(context.Background(), &toolport.Env{WorkingDir: wd, Values: toolport.NewSessionValues()})
	return tool, ctx, wd
}

func run(t *testing.T, tool *Tool, ctx context.Context, code string) (string, error) {
	b, _ := json.Marshal(map[string]any{"code": code})
	return tool.Run(ctx, b)
}

func TestScriptCallsTools(t *testing.T) {
	tool, ctx, wd := setup(t)
	out, err := run(t, tool, ctx, `
import hermes_tools as h
for i in range(3):
    h.write_file(path=f"n{i}.txt", content=str(i * i))
print(h.terminal(command="cat n0.txt n1.txt n2.txt"))
print(h.search_files(pattern="*.txt", target="files"))
try:
    h.read_file(path="/etc/passwd")
except h.ToolError as e:
    print("refused:", "outside the allowed roots" in str(e))
try:
    h.call("memory", action="add", target="user", content="x")
except h.ToolError as e:
    print("blocked:", "cannot be called from code" in str(e))
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"014", "[exit code: 0]", "n0.txt\nn1.txt\nn2.txt", "refused: True", "blocked: True"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "n2.txt")); string(b) != "4" {
		t.Fatalf("file written by the script: %q", b)
	}
}

func TestScriptFailuresAndTimeout(t *testing.T) {
	tool, ctx, _ := setup(t)
	out, err := run(t, tool, ctx, "print('before')\nraise SystemExit(3)")
	if err == nil || !strings.Contains(err.Error(), "exited with code 3") || !strings.Contains(out, "before") {
		t.Fatalf("%q %v", out, err)
	}
	out, err = run(t, tool, ctx, "1/0")
	if err == nil || !strings.Contains(out, "ZeroDivisionError") {
		t.Fatalf("traceback not returned: %q %v", out, err)
	}
	tool.Timeout = 500 * time.Millisecond
	start := time.Now()
	_, err = run(t, tool, ctx, "import time\ntime.sleep(30)")
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %v after %s", err, time.Since(start))
	}
}

func TestRPCNeedsTheToken(t *testing.T) {
	tool, ctx, _ := setup(t)
	out, err := run(t, tool, ctx, `
import os, hermes_tools
print("reply", hermes_tools.post(os.environ["HERMES_RPC_ENDPOINT"], "/call", "wrong", {"tool": "terminal", "args": {"command": "touch ran"}}))
`)
	if err != nil || !strings.Contains(out, "unauthorised") {
		t.Fatalf("%q %v", out, err)
	}
}

// launchers start `rm -rf DIR` in every way Python offers; os.execvp
// replaces the interpreter when allowed, so it comes last.
var launchers = []struct{ name, code string }{
	{"os.system", `os.system("rm -rf DIR")`},
	{"subprocess.run", `subprocess.run(["rm", "-rf", "DIR"])`},
	{"subprocess shell", `subprocess.run("rm -rf DIR", shell=True)`},
	{"subprocess.Popen", `subprocess.Popen(["rm", "-rf", "DIR"], close_fds=False).wait()`},
	{"subprocess posix_spawn", `subprocess.run(["/bin/rm", "-rf", "DIR"], close_fds=False)`},
	{"subprocess disguised", `subprocess.run(["ls", "-rf", "DIR"], executable="/bin/rm")`},
	{"os.popen", `os.popen("rm -rf DIR").read()`},
	{"os.spawnvp", `os.spawnvp(os.P_WAIT, "rm", ["rm", "-rf", "DIR"])`},
	{"os.posix_spawnp", `os.waitpid(os.posix_spawnp("rm", ["rm", "-rf", "DIR"], dict(os.environ)), 0)`},
	{"pty.spawn", `pty.spawn(["rm", "-rf", "DIR"])`},
	{"fork and exec", "pid = os.fork()\nif pid == 0:\n    try:\n        os.execv(\"/bin/rm\", [\"rm\", \"-rf\", \"DIR\"])\n    finally:\n        os._exit(126)\nos.waitpid(pid, 0)"},
	{"os.execvp", `os.execvp("rm", ["rm", "-rf", "DIR"])`},
}

// launchScript tries every launcher on its own directory under root and
// prints what each raised.
func launchScript(root string) (string, map[string]string) {
	dirs := map[string]string{}
	var b strings.Builder
	b.WriteString("import os, pty, subprocess, sys\n")
	for i, l := range launchers {
		d := filepath.Join(root, fmt.Sprintf("victim%d", i))
		os.MkdirAll(filepath.Join(d, "sub"), 0o755)
		dirs[l.name] = d
		fmt.Fprintf(&b, "try:\n%s\nexcept PermissionError as e:\n    print(%q, 'refused:', e)\nsys.stdout.flush()\n",
			indent(strings.ReplaceAll(l.code, "DIR", d)), l.name)
	}
	return b.String(), dirs
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func recorder(env *toolport.Env) func() []schema.ApprovalDecided {
	var mu sync.Mutex
	var got []schema.ApprovalDecided
	env.Record = func(_ context.Context, ps ...schema.Payload) error {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps {
			if d, ok := p.(schema.ApprovalDecided); ok {
				got = append(got, d)
			}
		}
		return nil
	}
	return func() []schema.ApprovalDecided {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// answer is a person who always gives the same answer.
type answer string

func (a answer) Ask(context.Context, toolport.Question) (string, error) { return string(a), nil }

// TestLaunchesNeedApproval: with terminal disabled the red team ran
// os.system("rm -rf …") from execute_code unasked. Every launcher now
// goes through the terminal's approval.
func TestLaunchesNeedApproval(t *testing.T) {
	tool, ctx, _ := setup(t)
	env := toolport.EnvFrom(ctx)
	env.Asker = answer("deny")
	decisions := recorder(env)
	root := t.TempDir()
	script, dirs := launchScript(root)
	out, _ := run(t, tool, ctx, script)
	for _, l := range launchers {
		if _, err := os.Stat(filepath.Join(dirs[l.name], "sub")); err != nil {
			t.Errorf("%s: a denied rm -rf ran\n%s", l.name, out)
		}
	}
	if !strings.Contains(out, "os.system refused: denied by the user") || !strings.Contains(out, "os.execvp refused: denied by the user") {
		t.Fatalf("the refusals did not reach the script:\n%s", out)
	}
	got := decisions()
	if len(got) != len(launchers) {
		t.Fatalf("%d approval decisions recorded for %d launches (one each): %+v", len(got), len(launchers), got)
	}
	for _, d := range got {
		if d.Decision != "deny" || d.By != "user" || d.Pattern != "recursive delete" || !strings.Contains(d.Command, "rm -rf "+root) {
			t.Fatalf("decision %+v", d)
		}
	}

	// Approved, the same launches run.
	env.Asker = answer("once")
	root = t.TempDir()
	script, dirs = launchScript(root)
	out, err := run(t, tool, ctx, script)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, l := range launchers {
		if _, err := os.Stat(dirs[l.name]); err == nil {
			t.Errorf("%s: an approved rm -rf did not run\n%s", l.name, out)
		}
	}
	got = decisions()
	if len(got) != len(launchers) {
		t.Errorf("%d questions for %d launches (one each): %+v", len(got), len(launchers), got)
	}
	for _, d := range got {
		if d.Decision != "once" || d.By != "user" {
			t.Fatalf("decision %+v", d)
		}
	}
}

func TestUnflaggedLaunchesRunAndCtypesIsOut(t *testing.T) {
	tool, ctx, _ := setup(t)
	// Nobody can be asked: flagged launches are refused, others run.
	out, err := run(t, tool, ctx, `
import subprocess, os
print(subprocess.run(["echo", "plain"], capture_output=True, text=True).stdout.strip())
os.system("echo via-system")
try:
    os.system("rm -rf /tmp/hermes-never-there")
except PermissionError as e:
    print("refused:", "nobody can be asked" in str(e))
try:
    import ctypes
    print("ctypes imported")
except ImportError as e:
    print("no ctypes:", e)
import json
print("json ok", json.dumps(1))
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"plain", "via-system", "refused: True", "no ctypes: ctypes is not available", "json ok 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("lacks %q:\n%s", want, out)
		}
	}
}

func TestScriptGetsNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-fake0123456789abcdefghij")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake0123456789abcdefghij")
	tool, ctx, _ := setup(t)
	out, err := run(t, tool, ctx, `
import os, subprocess
print(sorted(k for k in os.environ if "API_KEY" in k))
print(subprocess.run("env", shell=True, capture_output=True, text=True).stdout)
`)
	if err != nil || strings.Contains(out, "sk-") || strings.Contains(out, "API_KEY") || !strings.Contains(out, "[]") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// A script's tool calls count toward the turn's budget: the first rides on
// the response's iteration, each further one takes one.
func TestScriptToolCallsSpendTheBudget(t *testing.T) {
	tool, ctx, wd := setup(t)
	b := toolport.NewBudget(3)
	b.Take() // the model call that asked for the script
	toolport.EnvFrom(ctx).Budget = b
	out, err := run(t, tool, ctx, `
import hermes_tools as h
for i in range(5):
    try:
        h.write_file(path=f"b{i}.txt", content="x")
        print("ok", i)
    except h.ToolError as e:
        print("refused", i, "budget" in str(e))
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"ok 0", "ok 1", "ok 2", "refused 3 True", "refused 4 True"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, "b3.txt")); err == nil {
		t.Fatal("a call past the budget ran")
	}
	if b.Remaining() != 0 {
		t.Fatalf("budget left: %d", b.Remaining())
	}
}

// In the session's sandbox a script reaches its tools through the socket
// in the sandbox's /tmp, and cannot reach Hermes' home, the user's
// start-up files or anything outside the workspace, whatever it runs.
func TestSandboxedScript(t *testing.T) {
	if !sandbox.Probe().Enforced() {
		t.Fatalf("this machine cannot run the sandbox: %v", sandbox.Probe().Refusal())
	}
	root, err := os.MkdirTemp("/var/tmp", "hermes-code-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	agentHome, work, outside := filepath.Join(home, ".hermes"), filepath.Join(home, "project"), filepath.Join(root, "outside")
	canaries := map[string]string{
		filepath.Join(agentHome, "config.yaml"): "model: canary\n",
		filepath.Join(agentHome, ".env"):        "OPENAI_API_KEY=sk-canary-key-1234567890\n",
		filepath.Join(home, ".bashrc"):          "# canary rc\n",
		filepath.Join(outside, "canary"):        "outside\n",
	}
	for p, c := range canaries {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(work, 0o755)
	env := func() []string {
		return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "OPENAI_API_KEY=sk-canary-env-0987654321"}
	}
	// The network off: no socket can be made, yet the tools answer
	// through the descriptor Hermes hands over.
	policy := sandbox.Defaults(home, agentHome)
	policy.Network = sandbox.NetOff
	sbs := &terminal.Sandboxes{Policy: policy}
	term := terminal.Tools(terminal.Config{Sandboxes: sbs, Env: env})
	t.Cleanup(func() { term[0].(interface{ Close() error }).Close() })
	tool := &Tool{Toolbox: toolport.NewTools(append(files.Tools(files.Roots{Home: agentHome}), term...)...), Timeout: 20 * time.Second, Sandboxes: sbs, Env: env}
	ctx := toolport.WithEnv(context.Background(), &toolport.Env{WorkingDir: work, Values: toolport.NewSessionValues(), Yolo: true})
	out, err := run(t, tool, ctx, `
import os, shutil, subprocess, hermes_tools as h
print("tool:", h.terminal(command="echo via-rpc"))
print("key:", os.environ.get("OPENAI_API_KEY"))
import socket
try:
    socket.socket(socket.AF_UNIX)
    print("unix socket made")
except OSError as e:
    print("no unix socket", e.errno)
for path in [os.path.expanduser("~/.hermes"), os.path.expanduser("~/.bashrc"), "`+outside+`"]:
    try:
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    except OSError as e:
        print("refused", path, e.errno)
try:
    print("read:", open(os.path.expanduser("~/.hermes/.env")).read())
except OSError as e:
    print("unreadable", e.errno)
subprocess.run("cat ~/.hermes/config.yaml; echo x >> ~/.bashrc", shell=True)
open("inside.txt", "w").write("ok")
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "via-rpc") || !strings.Contains(out, "key: None") || !strings.Contains(out, "no unix socket 1") {
		t.Fatalf("output: %s", out)
	}
	if strings.Contains(out, "sk-canary") || strings.Contains(out, "model: canary") {
		t.Fatalf("a secret leaked: %s", out)
	}
	for p, c := range canaries {
		if b, err := os.ReadFile(p); err != nil || string(b) != c {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(work, "inside.txt")); string(b) != "ok" {
		t.Errorf("the workspace was not writable: %q", b)
	}
}
