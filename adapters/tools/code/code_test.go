package code

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/adapters/tools/files"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

func setup(t *testing.T) (*Tool, context.Context, string) {
	wd := t.TempDir()
	ts := append(files.Tools(files.Roots{}), terminal.Tools(terminal.Config{})...)
	tool := &Tool{Toolbox: agent.NewTools(ts...), Timeout: 20 * time.Second}
	ctx := agent.WithEnv(context.Background(), &agent.Env{WorkingDir: wd, Values: agent.NewSessionValues()})
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
import os, urllib.request, urllib.error
req = urllib.request.Request(os.environ["HERMES_RPC_URL"], data=b'{"tool":"terminal","args":{"command":"id"}}', headers={"Authorization": "Bearer wrong"})
try:
    urllib.request.urlopen(req)
    print("open")
except urllib.error.HTTPError as e:
    print("status", e.code)
`)
	if err != nil || !strings.Contains(out, "status 401") {
		t.Fatalf("%q %v", out, err)
	}
}
