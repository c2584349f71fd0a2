package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// acpEditor is the Go SDK's client side, collecting the agent's messages.
type acpEditor struct {
	mu   sync.Mutex
	text strings.Builder
}

func (e *acpEditor) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		e.mu.Lock()
		e.text.WriteString(c.Content.Text.Text)
		e.mu.Unlock()
	}
	return nil
}
func (e *acpEditor) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
}
func (e *acpEditor) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errors.New("not offered")
}
func (e *acpEditor) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errors.New("not offered")
}
func (e *acpEditor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("not offered")
}
func (e *acpEditor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("not offered")
}
func (e *acpEditor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("not offered")
}
func (e *acpEditor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("not offered")
}
func (e *acpEditor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("not offered")
}

// `hermes acp` run in this process on pipes: a new session in the
// editor's directory and a turn, with stdout carrying only JSON-RPC (the
// diagnostics, at debug level here, go to stderr), and the command ending
// when the editor closes its side; chat --resume continues the session.
func TestACPCommandInProcess(t *testing.T) {
	quietEnv(t)
	srv := llmtest.New(llmtest.Reply{Content: "Hello from Hermes."})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home, project := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: gpt-4o-mini\n"), 0o600)

	toAgent, fromEditor := io.Pipe()
	toEditor, fromAgent := io.Pipe()
	// The SDK's connection goroutines may still write after the command
	// returned: the copies are read under a lock.
	var stdout, stderr syncBuffer
	f := &app.Factory{IO: app.IOStreams{In: toAgent, Out: io.MultiWriter(fromAgent, &stdout), ErrOut: &stderr}}
	root := newRoot(f)
	root.SetArgs([]string{"--home", home, "--log-level", "debug", "acp"})
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(context.Background())
		fromAgent.Close()
	}()

	e := &acpEditor{}
	open := make(chan struct{})
	cs := sdk.NewClientSideConnection(e, fromEditor, gatedReader{toEditor, open})
	cs.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	close(open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.NewSession(ctx, sdk.NewSessionRequest{Cwd: project, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	if got := e.text.String(); got != "Hello from Hermes." {
		t.Fatalf("streamed %q", got)
	}
	fromEditor.Close() // the editor goes away
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hermes acp: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hermes acp did not end when the editor closed its side")
	}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout carries more than the protocol: %q", sc.Text())
		}
	}
	if !strings.Contains(stderr.String(), "acp: new session") {
		t.Fatalf("no diagnostics on stderr:\n%s", stderr.String())
	}
	out, errOut, err := inHome(t, home, "sessions", "list")
	if err != nil || !strings.Contains(out, string(ns.SessionId)[:8]) || !strings.Contains(out, "acp") {
		t.Fatalf("sessions list: %v\n%s\n%s", err, out, errOut)
	}
	// The editor gone, the session goes on in the terminal.
	srv.Add(llmtest.Reply{Content: "Still here."})
	out, errOut, err = inHome(t, home, "chat", "--resume", string(ns.SessionId), "-q", "and now?", "--quiet")
	if err != nil || out != "Still here.\n" {
		t.Fatalf("chat --resume: %q %v\n%s", out, err, errOut)
	}
	reqs := srv.Requests()
	if msgs, _ := reqs[len(reqs)-1].Body["messages"].([]any); len(msgs) < 4 { // system, hi, answer, and now?
		t.Fatalf("the resumed turn's call has %d messages: the editor's exchange is not in it", len(msgs))
	}
}

// gatedReader reads nothing until open is closed (the SDK's SetLogger is
// not safe while it reads).
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}
