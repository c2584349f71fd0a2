package acp_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/acp"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// TestMain lets the test binary be the attach client the editor runs
// (`hermes acp attach SOCKET` in the real binary).
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "acp" && os.Args[2] == "attach" {
		os.Exit(acp.Attach(os.Args[3], os.Getenv(acp.TokenEnv), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// termClient is an editor that offers terminals: it runs what it is asked
// to as a real process, as an editor does, and keeps its output.
type termClient struct {
	*client
	mu      sync.Mutex
	created []sdk.CreateTerminalRequest
	procs   map[string]*termProc
	// fail refuses every terminal.
	fail bool
	// onStart, when set, hears each terminal once its process started.
	onStart func(id string, p *termProc)
}

type termProc struct {
	cmd  *exec.Cmd
	out  syncBuf
	done chan struct{}
	code int
}

// syncBuf is a buffer the process writes while the test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (c *termClient) CreateTerminal(_ context.Context, r sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	c.mu.Lock()
	c.created = append(c.created, r)
	fail := c.fail
	c.mu.Unlock()
	if fail {
		return sdk.CreateTerminalResponse{}, sdk.NewInternalError(map[string]any{"error": "no terminal here"})
	}
	cmd := exec.Command(r.Command, r.Args...)
	if r.Cwd != nil {
		cmd.Dir = *r.Cwd
	}
	cmd.Env = os.Environ()
	for _, e := range r.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	p := &termProc{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		return sdk.CreateTerminalResponse{}, err
	}
	go func() {
		cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	id := "term-" + string(rune('a'+len(c.created)-1))
	c.mu.Lock()
	if c.procs == nil {
		c.procs = map[string]*termProc{}
	}
	c.procs[id] = p
	f := c.onStart
	c.mu.Unlock()
	if f != nil {
		go f(id, p)
	}
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *termClient) proc(id string) *termProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[id]
}

func (c *termClient) WaitForTerminalExit(ctx context.Context, r sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	p := c.proc(r.TerminalId)
	select {
	case <-p.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	return sdk.WaitForTerminalExitResponse{ExitCode: sdk.Ptr(p.code)}, nil
}

func (c *termClient) ReleaseTerminal(_ context.Context, r sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	if p := c.proc(r.TerminalId); p != nil {
		p.cmd.Process.Kill()
	}
	return sdk.ReleaseTerminalResponse{}, nil
}

func (c *termClient) KillTerminal(_ context.Context, r sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	if p := c.proc(r.TerminalId); p != nil {
		p.cmd.Process.Kill()
	}
	return sdk.KillTerminalResponse{}, nil
}

// newTermRig is a rig whose only tool is the real terminal, running its
// commands in the kernel sandbox, in a project under a home outside /tmp
// (which the sandbox replaces).
func newTermRig(t *testing.T, script ...llmtest.Reply) (*rig, string) {
	t.Helper()
	if !sandbox.Probe().Enforced() {
		t.Fatalf("this machine cannot run the sandbox: %v", sandbox.Probe().Refusal())
	}
	root, err := os.MkdirTemp("/var/tmp", "hermes-acp-term-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	cwd := filepath.Join(home, "project")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := embedded.Open(filepath.Join(root, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script...)
	sys := actors.NewSystem(zerolog.Nop())
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
	terms := terminal.Tools(terminal.Config{Sandboxes: &terminal.Sandboxes{Policy: sandbox.Defaults(home, "")}, Timeout: 60 * time.Second,
		Env: func() []string { return env }})
	r := &rig{srv: srv, store: store, danger: &dangerTool{}, cwd: cwd, blobs: blobs.Open(root)}
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(terms...), Exec: acp.CallExecutor{Next: tool.DirectExecutor{}},
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: &r.ask, Yolo: true}
	r.mgr = session.NewManager(sys, deps)
	t.Cleanup(func() {
		r.mgr.Shutdown()
		terms[0].(interface{ Close() error }).Close()
		sys.Shutdown()
		srv.Close()
		store.Close()
	})
	return r, home
}

// startWith initializes with caps and opens a session in r.cwd.
func startWith(t *testing.T, r *rig, cs *sdk.ClientSideConnection, caps sdk.ClientCapabilities) sdk.SessionId {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.NewSession(ctx, sdk.NewSessionRequest{Cwd: r.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return ns.SessionId
}

// terminalRefs are the terminal ids the client's tool call updates named.
func terminalRefs(c *client) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.terminals...)
}

func toolResults(t *testing.T, r *rig, id sdk.SessionId) []string {
	var out []string
	for _, p := range payloads(t, r.store, string(id)) {
		if e, ok := p.(schema.ToolResultAdded); ok {
			out = append(out, e.Content)
		}
	}
	return out
}

// An editor that offers terminals shows the command live in one: it runs
// only the attach client, which prints the command's output and exits
// with its code, while the command runs in Hermes' sandbox — a write
// outside the project fails, though the editor's process could make it.
func TestTerminalShownInTheEditor(t *testing.T) {
	r, home := newTermRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "terminal",
			Args: `{"command":"echo hello from the sandbox; echo to stderr >&2; touch ../escaped; echo touch $?; exit 3"}`}}},
		llmtest.Reply{Content: "done"})
	tc := &termClient{client: &client{}}
	cs := r.connect(t, tc)
	r.ask.to.AttachCommand = os.Args[0]
	id := startWith(t, r, cs, sdk.ClientCapabilities{Terminal: true})
	if got := prompt(t, cs, id, "run it"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	tc.mu.Lock()
	created := tc.created
	tc.mu.Unlock()
	if len(created) != 1 {
		t.Fatalf("%d terminals created, want 1", len(created))
	}
	req := created[0]
	if req.Command != os.Args[0] || len(req.Args) != 3 || req.Args[0] != "acp" || req.Args[1] != "attach" {
		t.Fatalf("the editor was asked to run %s %v: want the attach client", req.Command, req.Args)
	}
	if strings.Contains(strings.Join(req.Args, " "), "echo") || len(req.Env) != 1 || req.Env[0].Name != acp.TokenEnv {
		t.Fatalf("the editor was handed more than the attach client needs: args %v env %v", req.Args, req.Env)
	}
	if req.Cwd == nil || *req.Cwd != r.cwd {
		t.Fatalf("terminal cwd %v, want %s", req.Cwd, r.cwd)
	}
	p := tc.proc("term-a")
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the attach client did not exit")
	}
	out := p.out.String()
	for _, want := range []string{"hello from the sandbox", "to stderr", "touch 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the editor's terminal shows %q, missing %q", out, want)
		}
	}
	if p.code != 3 {
		t.Fatalf("the editor's terminal exited %d, want the command's 3", p.code)
	}
	if _, err := os.Stat(filepath.Join(home, "escaped")); !os.IsNotExist(err) {
		t.Fatalf("the command wrote outside the project (%v): it did not run in the sandbox", err)
	}
	if refs := terminalRefs(tc.client); len(refs) == 0 || refs[0] != "term-a" || refs[len(refs)-1] != "term-a" {
		t.Fatalf("tool call updates named terminals %v, want term-a (shown, then kept at the end)", refs)
	}
	res := toolResults(t, r, id)
	if len(res) != 1 || !strings.Contains(res[0], "hello from the sandbox") || !strings.Contains(res[0], "[exit code: 3]") {
		t.Fatalf("the model read %q", res)
	}
}

// Stopping the process in the editor's terminal stops the command, and
// the model is told so.
func TestStoppingTheEditorsTerminalStopsTheCommand(t *testing.T) {
	r, _ := newTermRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "terminal", Args: `{"command":"echo started; sleep 120; echo finished"}`}}},
		llmtest.Reply{Content: "stopped"})
	tc := &termClient{client: &client{}}
	tc.onStart = func(id string, p *termProc) {
		// The person presses stop once the command has said something.
		for !strings.Contains(tc.output(p), "started") {
			select {
			case <-p.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		p.cmd.Process.Kill()
	}
	cs := r.connect(t, tc)
	r.ask.to.AttachCommand = os.Args[0]
	id := startWith(t, r, cs, sdk.ClientCapabilities{Terminal: true})
	if got := prompt(t, cs, id, "run it"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	res := toolResults(t, r, id)
	if len(res) != 1 || !strings.Contains(res[0], "stopped in the editor's terminal") || strings.Contains(res[0], "finished") {
		t.Fatalf("the model read %q", res)
	}
}

func (c *termClient) output(p *termProc) string { return p.out.String() }

// Without the capability, or when the editor refuses the terminal, the
// command runs all the same and its output is the tool call's text.
func TestTerminalNotOfferedOrRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		caps sdk.ClientCapabilities
		fail bool
		asks int
	}{
		{"not offered", sdk.ClientCapabilities{}, false, 0},
		{"refused", sdk.ClientCapabilities{Terminal: true}, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTermRig(t,
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "terminal", Args: `{"command":"echo plain output"}`}}},
				llmtest.Reply{Content: "done"})
			tc := &termClient{client: &client{}, fail: tt.fail}
			cs := r.connect(t, tc)
			r.ask.to.AttachCommand = os.Args[0]
			id := startWith(t, r, cs, tt.caps)
			if got := prompt(t, cs, id, "run it"); got != sdk.StopReasonEndTurn {
				t.Fatalf("stop reason %q", got)
			}
			tc.mu.Lock()
			n := len(tc.created)
			tc.mu.Unlock()
			if n != tt.asks {
				t.Fatalf("%d terminals asked for, want %d", n, tt.asks)
			}
			if refs := terminalRefs(tc.client); len(refs) != 0 {
				t.Fatalf("tool call updates named terminals %v", refs)
			}
			if res := toolResults(t, r, id); len(res) != 1 || !strings.Contains(res[0], "plain output") {
				t.Fatalf("the model read %q", res)
			}
			if !strings.Contains(strings.Join(tc.texts(), "\n"), "plain output") {
				t.Fatalf("the editor was not shown the output as text: %v", tc.texts())
			}
		})
	}
}
