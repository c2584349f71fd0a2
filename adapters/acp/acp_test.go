package acp_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/acp"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// readTool stands in for read_file: it reports the path it was asked for.
type readTool struct{}

func (readTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "read_file", Description: "read", Parameters: map[string]any{"type": "object"}}
}
func (readTool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }
func (readTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	var v struct{ Path string }
	json.Unmarshal(a, &v)
	return "contents of " + v.Path, nil
}

// dangerTool asks for approval as the terminal does and records the answer.
type dangerTool struct {
	mu      sync.Mutex
	answers []string
}

func (*dangerTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "run", Parameters: map[string]any{"type": "object"}}
}
func (*dangerTool) Flags() tool.Flags { return tool.Flags{} }
func (d *dangerTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	env := tool.EnvFrom(ctx)
	if env.Asker == nil {
		return "", tool.ErrNoAsker
	}
	answer, err := env.Asker.Ask(ctx, tool.Question{Kind: tool.QuestionApproval, Text: "The agent wants to run rm -rf build. Allow it?",
		Choices: []string{"once", "session", "always", "deny"}})
	d.mu.Lock()
	d.answers = append(d.answers, answer)
	d.mu.Unlock()
	if err != nil {
		return "", err
	}
	if answer == "deny" {
		return "", errors.New("denied by the user")
	}
	return "ran", nil
}

func (d *dangerTool) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.answers)
}

// writeTool stands in for write_file: it writes content to path, under
// the session's working directory when relative.
type writeTool struct{}

func (writeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "write_file", Description: "write", Parameters: map[string]any{"type": "object"}}
}
func (writeTool) Flags() tool.Flags { return tool.Flags{} }
func (writeTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	var v struct{ Path, Content string }
	json.Unmarshal(a, &v)
	if strings.Contains(v.Path, "forbidden") {
		return "", errors.New("refused")
	}
	p := filepath.Join(tool.EnvFrom(ctx).WorkingDir, v.Path)
	os.MkdirAll(filepath.Dir(p), 0o755)
	return "wrote " + v.Path, os.WriteFile(p, []byte(v.Content), 0o644)
}

// slowTool runs until its call is interrupted.
type slowTool struct{}

func (slowTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "slow", Description: "slow", Parameters: map[string]any{"type": "object"}}
}
func (slowTool) Flags() tool.Flags { return tool.Flags{} }
func (slowTool) Run(ctx context.Context, a json.RawMessage) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(20 * time.Second):
		return "slept", nil
	}
}

// client is the editor's side: it records updates and answers permission
// requests with answer.
type client struct {
	mu      sync.Mutex
	updates []string
	// diffs are the diffs tool call updates carried: "path: old => new",
	// old "<none>" for a new file.
	diffs  []string
	asked  []sdk.RequestPermissionRequest
	answer func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse
	// onUpdate, when set, hears each update as it arrives.
	onUpdate func(string)
	// terminals are the terminal ids tool call updates named, in order;
	// texts the text content they carried.
	terminals []string
	textsSeen []string
}

func (c *client) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.textsSeen...)
}

func (c *client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	s := describe(n.Update)
	c.mu.Lock()
	c.updates = append(c.updates, s)
	if u := n.Update.ToolCallUpdate; u != nil {
		for _, tc := range u.Content {
			if tc.Terminal != nil {
				c.terminals = append(c.terminals, tc.Terminal.TerminalId)
			}
			if tc.Content != nil && tc.Content.Content.Text != nil {
				c.textsSeen = append(c.textsSeen, tc.Content.Content.Text.Text)
			}
			if d := tc.Diff; d != nil {
				old := "<none>"
				if d.OldText != nil {
					old = *d.OldText
				}
				c.diffs = append(c.diffs, fmt.Sprintf("%s: %s => %s", d.Path, old, d.NewText))
			}
		}
	}
	f := c.onUpdate
	c.mu.Unlock()
	if f != nil {
		f(s)
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	f := c.answer
	c.mu.Unlock()
	if f == nil {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
	}
	return f(p), nil
}

// take returns the updates so far and forgets them.
func (c *client) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.updates
	c.updates = nil
	return u
}

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errors.New("not offered")
}
func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errors.New("not offered")
}
func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("not offered")
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("not offered")
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("not offered")
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("not offered")
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("not offered")
}

// describe is an update in one line: its kind, then what the tests check.
func describe(u sdk.SessionUpdate) string {
	text := func(c sdk.ContentBlock) string {
		if c.Text != nil {
			return c.Text.Text
		}
		return "?"
	}
	switch {
	case u.UserMessageChunk != nil:
		return "user " + text(u.UserMessageChunk.Content)
	case u.AgentMessageChunk != nil:
		return "message " + text(u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		return "thought " + text(u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		tc := u.ToolCall
		var locs []string
		for _, l := range tc.Locations {
			s := l.Path
			if l.Line != nil {
				s += fmt.Sprintf(":%d", *l.Line)
			}
			locs = append(locs, s)
		}
		return fmt.Sprintf("tool_call %s %s %s %q %v", tc.ToolCallId, tc.Status, tc.Kind, tc.Title, locs)
	case u.ToolCallUpdate != nil:
		st := ""
		if u.ToolCallUpdate.Status != nil {
			st = string(*u.ToolCallUpdate.Status)
		}
		return fmt.Sprintf("tool_call_update %s %s", u.ToolCallUpdate.ToolCallId, st)
	}
	return "other"
}

// joined merges runs of message, thought and user chunks into one line
// each, as an editor shows them.
func joined(us []string) []string {
	var out []string
	for _, u := range us {
		kind, rest, _ := strings.Cut(u, " ")
		if n := len(out); n > 0 && (kind == "message" || kind == "thought" || kind == "user") && strings.HasPrefix(out[n-1], kind+" ") {
			out[n-1] += rest
			continue
		}
		out = append(out, u)
	}
	return out
}

type rig struct {
	srv    *llmtest.Server
	store  *embedded.Store
	mgr    *session.Manager
	danger *dangerTool
	cwd    string
	blobs  *blobs.Store
	// ask is the sessions' Asker: it forwards to the agent of the
	// connection served last (the tests run one at a time).
	ask forwarder
}

func newRig(t *testing.T, script ...llmtest.Reply) *rig {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script...)
	sys := actors.NewSystem(zerolog.Nop())
	r := &rig{srv: srv, store: store, danger: &dangerTool{}, cwd: filepath.Join(dir, "project"), blobs: blobs.Open(dir)}
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(readTool{}, writeTool{}, r.danger, slowTool{}), Exec: acp.CallExecutor{Next: tool.DirectExecutor{}},
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: &r.ask, Blobs: r.blobs}
	r.mgr = session.NewManager(sys, deps)
	t.Cleanup(func() {
		r.mgr.Shutdown()
		sys.Shutdown()
		srv.Close()
		store.Close()
	})
	return r
}

// forwarder asks the agent of the connection serving now.
type forwarder struct {
	mu sync.Mutex
	to *acp.Agent
}

func (f *forwarder) Ask(ctx context.Context, q tool.Question) (string, error) {
	f.mu.Lock()
	to := f.to
	f.mu.Unlock()
	return to.Ask(ctx, q)
}

// MirrorTerminal forwards to the agent of the connection serving now, as
// the sessions' Asker in `hermes acp` (the agent itself) offers it.
func (f *forwarder) MirrorTerminal(ctx context.Context, command, dir string) (tool.MirroredTerminal, error) {
	f.mu.Lock()
	to := f.to
	f.mu.Unlock()
	return to.MirrorTerminal(ctx, command, dir)
}

// connect serves a new ACP connection and returns the client's side.
func (r *rig) connect(t *testing.T, c sdk.Client) *sdk.ClientSideConnection {
	t.Helper()
	ag := &acp.Agent{Turns: r.mgr, Store: r.store, Log: zerolog.Nop(), Version: "test", Images: r.blobs,
		Create: func(ctx context.Context, cwd string) (string, error) {
			id := uuid.NewString()
			return id, session.Create(ctx, r.store, id, session.Start{Source: "acp", Model: "gpt-4o-mini", WorkingDir: cwd, System: "You are Hermes."})
		},
		Open: func(ctx context.Context, id string) error { _, err := r.mgr.Session(ctx, id); return err },
	}
	r.ask.mu.Lock()
	r.ask.to = ag
	r.ask.mu.Unlock()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ag.Serve(ctx, toAgent, fromAgent)
	}()
	t.Cleanup(func() {
		fromClient.Close()
		fromAgent.Close()
		cancel()
		<-done
	})
	// The client's logger is set before it reads (the SDK's SetLogger is
	// not safe while it does): quiet tests.
	open := make(chan struct{})
	cs := sdk.NewClientSideConnection(c, fromClient, gated{toClient, open})
	cs.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	close(open)
	return cs
}

// gated reads nothing until open is closed.
type gated struct {
	r    io.Reader
	open chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// start initializes and opens a new session in r.cwd.
func (r *rig) start(t *testing.T, cs *sdk.ClientSideConnection) sdk.SessionId {
	t.Helper()
	ctx := context.Background()
	init, err := cs.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != sdk.ProtocolVersionNumber || !init.AgentCapabilities.LoadSession {
		t.Fatalf("initialize: %+v", init)
	}
	ns, err := cs.NewSession(ctx, sdk.NewSessionRequest{Cwd: r.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return ns.SessionId
}

func prompt(t *testing.T, cs *sdk.ClientSideConnection, id sdk.SessionId, text string) sdk.StopReason {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.StopReason
}

func payloads(t *testing.T, s events.Store, id string) []schema.Payload {
	t.Helper()
	rs, err := s.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.Payload
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// A prompt whose turn reads a file streams the tool call (kind, title,
// location under the client's cwd), its completion, the reasoning and the
// answer, in that order, and ends the turn; the session is Hermes' own,
// recorded with source acp and the client's cwd.
func TestPromptStreamsToolCallsThenAnswer(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"notes.txt","offset":3}`}}},
		llmtest.Reply{Reasoning: "the file says hi", Content: "The notes say hi."})
	c := &client{}
	cs := r.connect(t, c)
	id := r.start(t, cs)
	if got := prompt(t, cs, id, "what do my notes say?"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q, want end_turn", got)
	}
	want := []string{
		fmt.Sprintf("tool_call call_1 in_progress read %q [%s:3]", "read_file: notes.txt", filepath.Join(r.cwd, "notes.txt")),
		"tool_call_update call_1 completed",
		"thought the file says hi",
		"message The notes say hi.",
	}
	if got := joined(c.take()); !slices.Equal(got, want) {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ps := payloads(t, r.store, string(id))
	st := ps[0].(schema.SessionStarted)
	if st.Source != "acp" || st.WorkingDir != r.cwd {
		t.Fatalf("session started %+v: want source acp in %s", st, r.cwd)
	}
	var kinds []string
	for _, p := range ps {
		switch e := p.(type) {
		case schema.UserMessageAdded:
			kinds = append(kinds, "user:"+e.Content)
		case schema.ToolResultAdded:
			kinds = append(kinds, "result:"+e.Content)
		case schema.TurnCompleted:
			kinds = append(kinds, "completed")
		}
	}
	if want := []string{"user:what do my notes say?", "result:contents of notes.txt", "completed"}; !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}

// session/cancel stops the turn in flight: the prompt answers cancelled,
// the tool call is closed as failed, the turn is recorded as interrupted,
// and the session takes the next prompt.
func TestCancelStopsTheTurn(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_slow", Name: "slow", Args: `{}`}}},
		llmtest.Reply{Content: "after"})
	started := make(chan struct{}, 1)
	c := &client{onUpdate: func(u string) {
		if strings.HasPrefix(u, "tool_call call_slow") {
			started <- struct{}{}
		}
	}}
	cs := r.connect(t, c)
	id := r.start(t, cs)
	go func() {
		select {
		case <-started:
			cs.Cancel(context.Background(), sdk.CancelNotification{SessionId: id})
		case <-time.After(20 * time.Second):
		}
	}()
	t0 := time.Now()
	if got := prompt(t, cs, id, "take your time"); got != sdk.StopReasonCancelled {
		t.Fatalf("stop reason %q, want cancelled", got)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("cancel took %s", d)
	}
	if got := c.take(); !slices.Contains(got, "tool_call_update call_slow failed") {
		t.Fatalf("updates %v: the cut call is not closed as failed", got)
	}
	interrupted := false
	for _, p := range payloads(t, r.store, string(id)) {
		if _, ok := p.(schema.TurnInterrupted); ok {
			interrupted = true
		}
	}
	if !interrupted {
		t.Fatal("no TurnInterrupted recorded")
	}
	if got := prompt(t, cs, id, "go on"); got != sdk.StopReasonEndTurn {
		t.Fatalf("after the cancel: stop reason %q", got)
	}
	if got := joined(c.take()); !slices.Equal(got, []string{"message after"}) {
		t.Fatalf("after the cancel: %v", got)
	}
}

// An approval the tool asks for becomes a permission request about its
// tool call, offering allow once / for the session / always and deny; the
// option the editor picks is the answer the tool gets.
func TestPermissionRequestAnswersTheApproval(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "done"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_b", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "not done"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_c", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "done for good"})
	pick := "once"
	c := &client{}
	c.answer = func(p sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(pick)}}}
	}
	cs := r.connect(t, c)
	id := r.start(t, cs)
	if got := prompt(t, cs, id, "clean the build"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	if got := joined(c.take()); !slices.Equal(got, []string{`tool_call call_a in_progress execute "terminal: rm -rf build" []`, "tool_call_update call_a completed", "message done"}) {
		t.Fatalf("allowed: %v", got)
	}
	pick = "deny"
	if got := prompt(t, cs, id, "clean it again"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	if got := joined(c.take()); !slices.Equal(got, []string{`tool_call call_b in_progress execute "terminal: rm -rf build" []`, "tool_call_update call_b failed", "message not done"}) {
		t.Fatalf("denied: %v", got)
	}
	pick = "always"
	if got := prompt(t, cs, id, "and again"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	if got := r.danger.got(); !slices.Equal(got, []string{"once", "deny", "always"}) {
		t.Fatalf("the tool got %v, want [once deny always]", got)
	}
	if len(c.asked) != 3 {
		t.Fatalf("%d permission requests, want 3", len(c.asked))
	}
	q := c.asked[0]
	if q.SessionId != id || q.ToolCall.ToolCallId != "call_a" || q.ToolCall.Kind == nil || *q.ToolCall.Kind != sdk.ToolKindExecute {
		t.Fatalf("request %+v: not about call_a of the session", q)
	}
	var opts []string
	for _, o := range q.Options {
		opts = append(opts, string(o.OptionId)+"="+string(o.Kind))
	}
	if want := []string{"once=allow_once", "session=allow_always", "always=allow_always", "deny=reject_once"}; !slices.Equal(opts, want) {
		t.Fatalf("options %v, want %v", opts, want)
	}
}

// A permission request the editor cancels (its user dismissed it) denies.
func TestCancelledPermissionDenies(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "ok"})
	c := &client{} // answers every request cancelled
	cs := r.connect(t, c)
	id := r.start(t, cs)
	prompt(t, cs, id, "clean")
	if got := r.danger.got(); !slices.Equal(got, []string{"deny"}) {
		t.Fatalf("the tool got %v, want [deny]", got)
	}
}

// session/load of a session replays its conversation (the person's
// message, the tool call and how it ended, the answer) and continues it:
// the next prompt's model call has the history.
func TestLoadReplaysAndContinues(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"notes.txt"}`}}},
		llmtest.Reply{Content: "The notes say hi."},
		llmtest.Reply{Content: "You asked about your notes."})
	first := &client{}
	cs := r.connect(t, first)
	id := r.start(t, cs)
	prompt(t, cs, id, "what do my notes say?")

	second := &client{}
	cs2 := r.connect(t, second)
	ctx := context.Background()
	if _, err := cs2.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: "/elsewhere", McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user what do my notes say?",
		fmt.Sprintf("tool_call call_1 in_progress read %q [%s]", "read_file: notes.txt", filepath.Join(r.cwd, "notes.txt")),
		"tool_call_update call_1 completed",
		"message The notes say hi.",
	}
	if got := joined(second.take()); !slices.Equal(got, want) {
		t.Fatalf("replay:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := prompt(t, cs2, id, "what did I ask?"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	reqs := r.srv.Requests()
	msgs, _ := reqs[len(reqs)-1].Body["messages"].([]any)
	if len(msgs) < 5 { // system, user, assistant (call), tool, assistant, user
		t.Fatalf("the continued turn's model call has %d messages: the history was not kept", len(msgs))
	}
	if _, err := cs2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "no-such-session", Cwd: "/", McpServers: []sdk.McpServer{}}); err == nil {
		t.Fatal("loading a session that does not exist succeeded")
	}
}

// A prompt to a session the connection does not know (never opened, or
// closed) is a JSON-RPC error (invalid params), and the connection goes on.
func TestPromptToUnknownSession(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "hi"})
	cs := r.connect(t, &client{})
	id := r.start(t, cs)
	_, err := cs.Prompt(context.Background(), sdk.PromptRequest{SessionId: "nope", Prompt: []sdk.ContentBlock{sdk.TextBlock("hello")}})
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Error(), "unknown session") {
		t.Fatalf("err %v, want invalid params naming the unknown session", err)
	}
	if got := prompt(t, cs, id, "hello"); got != sdk.StopReasonEndTurn {
		t.Fatalf("after the error: %q", got)
	}
	// A closed session is unknown to the connection from then on.
	if _, err := cs.CloseSession(context.Background(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.Prompt(context.Background(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hello")}})
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Fatalf("prompt after close: %v", err)
	}
}

// Malformed input on the wire (a line that is not JSON, a request with
// wrong params, an unknown method) gets an error where it has an id, and
// the agent keeps serving.
func TestMalformedRequestsKeepServing(t *testing.T) {
	r := newRig(t)
	ag := &acp.Agent{Turns: r.mgr, Store: r.store, Log: zerolog.Nop(),
		Create: func(ctx context.Context, cwd string) (string, error) { return "", errors.New("unused") }}
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	go ag.Serve(context.Background(), toAgent, fromAgent)
	t.Cleanup(func() { fromClient.Close(); fromAgent.Close() })
	lines := bufio.NewScanner(toClient)
	call := func(raw string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(fromClient, raw+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", raw, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	io.WriteString(fromClient, "this is not json\n")
	if m := call(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":5,"prompt":"x"}}`); code(m) != -32602 {
		t.Fatalf("bad params: %v", m)
	}
	if m := call(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`); code(m) != -32602 {
		t.Fatalf("relative cwd: %v", m)
	}
	if m := call(`{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}`); code(m) != -32601 {
		t.Fatalf("unknown method: %v", m)
	}
	m := call(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`)
	res, _ := m["result"].(map[string]any)
	if res["protocolVersion"] != float64(1) {
		t.Fatalf("initialize after the errors: %v", m)
	}
}

// A turn whose answer the provider's filter withheld ends with refusal;
// one still cut by the output limit after its continuations with
// max_tokens; one that ran out of its iteration budget with
// max_turn_requests.
func TestStopReasons(t *testing.T) {
	cut := llmtest.Reply{Content: "and so", Finish: "length"}
	r := newRig(t, llmtest.Reply{Content: "I can't", Finish: "content_filter"}, cut, cut, cut, cut)
	cs := r.connect(t, &client{})
	id := r.start(t, cs)
	if got := prompt(t, cs, id, "something filtered"); got != sdk.StopReasonRefusal {
		t.Fatalf("filtered: %q, want refusal", got)
	}
	if got := prompt(t, cs, id, "write a lot"); got != sdk.StopReasonMaxTokens {
		t.Fatalf("cut: %q, want max_tokens", got)
	}
	r.srv.SetDefault(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "read_file", Args: `{"path":"c"}`}}})
	if got := prompt(t, cs, id, "read everything"); got != sdk.StopReasonMaxTurnRequests {
		t.Fatalf("budget: %q, want max_turn_requests", got)
	}
}

// A session compressed into a child is replayed whole, the parent's
// messages and then the child's, not as its summary; session/resume
// continues a session without replaying it.
func TestLoadFollowsCompressionAndResume(t *testing.T) {
	r := newRig(t)
	r.srv.SetDefault(llmtest.Reply{Content: "fine"})
	c := &client{}
	cs := r.connect(t, c)
	id := r.start(t, cs)
	for _, q := range []string{"one", "two", "three"} {
		prompt(t, cs, id, q)
	}
	next, err := r.mgr.CompressNow(context.Background(), string(id), session.CompressNow{Force: true})
	if err != nil || next == string(id) {
		t.Fatalf("compress: %q %v", next, err)
	}
	prompt(t, cs, id, "four")

	second := &client{}
	cs2 := r.connect(t, second)
	ctx := context.Background()
	if _, err := cs2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: r.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, q := range []string{"one", "two", "three", "four"} {
		want = append(want, "user "+q, "message fine")
	}
	if got := joined(second.take()); !slices.Equal(got, want) {
		t.Fatalf("replay across the compression:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	third := &client{}
	cs3 := r.connect(t, third)
	if _, err := cs3.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: id, Cwd: r.cwd}); err != nil {
		t.Fatal(err)
	}
	if got := third.take(); len(got) != 0 {
		t.Fatalf("resume replayed %v", got)
	}
	if got := prompt(t, cs3, id, "five"); got != sdk.StopReasonEndTurn {
		t.Fatalf("after resume: %q", got)
	}
	if got := joined(third.take()); !slices.Equal(got, []string{"message fine"}) {
		t.Fatalf("after resume: %v", got)
	}
}

// What an editor attaches to a prompt reaches the model: a link to a file
// by its URI, an embedded file's text inline with its URI.
func TestPromptWithResources(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "ok"})
	cs := r.connect(t, &client{})
	id := r.start(t, cs)
	ctx := context.Background()
	_, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{
		sdk.TextBlock("compare"),
		sdk.ResourceLinkBlock("a.go", "file:///project/a.go"),
		sdk.TextBlock("with"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///project/b.go", Text: "package b"}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	var user string
	for _, p := range payloads(t, r.store, string(id)) {
		if u, ok := p.(schema.UserMessageAdded); ok {
			user = u.Content
		}
	}
	for _, want := range []string{"compare", "[a.go](file:///project/a.go)", "with", "file:///project/b.go", "package b"} {
		if !strings.Contains(user, want) {
			t.Fatalf("the user message %q lacks %q", user, want)
		}
	}
	if _, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{}}); err == nil {
		t.Fatal("an empty prompt was run")
	}
}

// An edit is shown to the editor as a diff of the file it changed: a new
// file with no old text, a changed one with both; a refused edit has none.
func TestEditsCarryDiffs(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w1", Name: "write_file", Args: `{"path":"docs/a.md","content":"one\n"}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w2", Name: "write_file", Args: `{"path":"docs/a.md","content":"two\n"}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w3", Name: "write_file", Args: `{"path":"forbidden.md","content":"x"}`}}},
		llmtest.Reply{Content: "written"})
	c := &client{}
	cs := r.connect(t, c)
	id := r.start(t, cs)
	prompt(t, cs, id, "write the docs")
	p := filepath.Join(r.cwd, "docs", "a.md")
	want := []string{p + ": <none> => one\n", p + ": one\n => two\n"}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(c.diffs, want) {
		t.Fatalf("diffs %q, want %q", c.diffs, want)
	}
	if got := joined(c.updates); !slices.Contains(got, "tool_call_update w3 failed") {
		t.Fatalf("updates %v", got)
	}
}

// An image block of a prompt reaches the model as an image part with its
// bytes; bytes that are not an image refuse the prompt before anything is
// recorded.
func TestPromptWithImage(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "a dot"})
	cs := r.connect(t, &client{})
	id := r.start(t, cs)
	ctx := context.Background()
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	b64 := base64.StdEncoding.EncodeToString(png)
	if _, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{
		sdk.TextBlock("what is this?"), sdk.ImageBlock(base64.StdEncoding.EncodeToString([]byte("plain text")), "image/png")}}); err == nil || !strings.Contains(err.Error(), "not a PNG") {
		t.Fatalf("a prompt with a non-image was taken: %v", err)
	}
	if n := len(r.srv.Requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
	if _, err := cs.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("what is this?"), sdk.ImageBlock(b64, "image/png")}}); err != nil {
		t.Fatal(err)
	}
	if raw := string(r.srv.Requests()[0].Raw); !strings.Contains(raw, `"url":"data:image/png;base64,`+b64+`"`) {
		t.Fatalf("request %s", raw)
	}
	users := 0
	for _, p := range payloads(t, r.store, string(id)) {
		if u, ok := p.(schema.UserMessageAdded); ok {
			users++
			if len(u.Images) != 1 || u.Images[0].MediaType != "image/png" {
				t.Fatalf("user message %+v", u)
			}
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages, want the one that was taken", users)
	}
}
