// Package acp runs Hermes as an Agent Client Protocol agent: an editor
// (Zed, JetBrains, Neovim, any ACP client) starts `hermes acp` and speaks
// JSON-RPC with it over stdio. The package maps the protocol onto the
// session layer: session/new creates a Hermes session (recorded as events,
// so it is listed, searched and replayed as any other), session/load
// replays one to the editor and continues it, session/prompt runs one turn
// and streams what it does (text, reasoning, tool calls with their status),
// session/cancel stops the turn, and approvals of dangerous actions become
// session/request_permission questions the editor's user answers.
//
// Hermes' own tools run in the session's working directory under Hermes'
// sandbox, never in the editor: the editor's file system methods are not
// used, and where the editor offers terminals, a command's output is shown
// live in one (see MirrorTerminal) while the command itself runs in the
// sandbox.
package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Turns runs the turns of sessions: *session.Manager implements it.
type Turns interface {
	RunTurn(ctx context.Context, id string, t *session.Turn) session.TurnResult
	Stop(id, reason string)
}

// Agent is the ACP agent of one connection. Fill its fields, hand it to the
// session layer as the tool.Asker (it asks the editor), then Serve.
type Agent struct {
	// Turns runs the turns (the session manager).
	Turns Turns
	// Store holds the sessions' events: load reads them to replay.
	Store events.Store
	// Create starts a new Hermes session whose working directory is cwd
	// and returns its id.
	Create func(ctx context.Context, cwd string) (string, error)
	// Open, when set, starts a session in this process (the session
	// manager's actor and lease) when it is created or loaded: a session
	// another process runs is refused at load rather than at the first
	// prompt.
	Open func(ctx context.Context, id string) error
	// Log receives diagnostics; stdout is the protocol, so never stdout.
	Log zerolog.Logger
	// ConnLog, when set, receives the SDK's connection diagnostics
	// (default: discarded).
	ConnLog *slog.Logger
	// Version is reported to the client in agentInfo.
	Version string
	// Images keeps the images of prompts (the home's blob store); nil
	// refuses image blocks and does not offer them to the client.
	Images Images
	// MCP, when set, starts the MCP servers an editor passes with a
	// session (session/new, load, resume), their tools offered to the
	// model from the next prompt; an error refuses the request. nil
	// ignores them.
	MCP func(ctx context.Context, servers []MCPServer) error
	// AttachCommand is the program the editor runs to show a command's
	// output in its terminal, with the arguments "acp attach SOCKET"
	// (default: this executable).
	AttachCommand string

	mu sync.Mutex
	// terminals: the client offers terminals (clientCapabilities).
	terminals bool
	conn      *sdk.AgentSideConnection
	sessions  map[string]*state
}

// Images keeps an image durably and names it (events/blobs): the bytes
// are checked (type by sniffing, size) before anything is recorded.
type Images interface {
	PutImage(ctx context.Context, data []byte, name string) (schema.ImageRef, error)
}

// state is one session the client created or loaded on this connection.
type state struct {
	id  string
	cwd string
	// out is the update stream of the prompt in flight (nil between
	// prompts): questions flush it so they follow the tool call they are
	// about.
	out *outbox
	// calls are the tool calls in flight, by id, with their titles.
	calls map[string]toolInfo
}

var (
	_ sdk.Agent       = (*Agent)(nil)
	_ sdk.AgentLoader = (*Agent)(nil)
)

// Serve speaks the protocol on r (from the client) and w (to it) until the
// client disconnects or ctx ends.
func (a *Agent) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	// The SDK reads from its first moment, and its logger is not safe to
	// set while it does: nothing is read until the logger is in place.
	g := &gate{r: r, open: make(chan struct{})}
	conn := sdk.NewAgentSideConnection(a, w, g)
	l := a.ConnLog
	if l == nil {
		l = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	conn.SetLogger(l)
	a.mu.Lock()
	a.conn = conn
	if a.sessions == nil {
		a.sessions = map[string]*state{}
	}
	a.mu.Unlock()
	close(g.open)
	select {
	case <-conn.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gate is a reader that reads nothing until open is closed.
type gate struct {
	r    io.Reader
	open chan struct{}
}

func (g *gate) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// client is the connection, once Serve set it.
func (a *Agent) client() *sdk.AgentSideConnection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// Initialize implements sdk.Agent: the protocol version and what Hermes
// offers (load, resume and close of sessions, embedded context in prompts).
func (a *Agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	v := a.Version
	if v == "" {
		v = "dev"
	}
	a.mu.Lock()
	a.terminals = p.ClientCapabilities.Terminal
	a.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true, Image: a.Images != nil},
			McpCapabilities:    sdk.McpCapabilities{Http: a.MCP != nil, Sse: a.MCP != nil},
			SessionCapabilities: sdk.SessionCapabilities{
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
			},
		},
		AgentInfo:   &sdk.Implementation{Name: "hermes", Version: v},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate implements sdk.Agent: Hermes needs no authentication from
// the editor (its model keys are its own configuration).
func (a *Agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// NewSession implements sdk.Agent: a new Hermes session working in the
// client's cwd.
func (a *Agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if !filepath.IsAbs(p.Cwd) {
		return sdk.NewSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", p.Cwd)})
	}
	if err := a.addMCP(ctx, p.McpServers); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	id, err := a.Create(ctx, p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, fmt.Errorf("create a session: %w", err)
	}
	if a.Open != nil {
		// Started now rather than at the first prompt, which then
		// streams sooner.
		if err := a.Open(ctx, id); err != nil {
			return sdk.NewSessionResponse{}, err
		}
	}
	a.track(id, p.Cwd)
	a.Log.Info().Str("session", id).Str("cwd", p.Cwd).Msg("acp: new session")
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(id)}, nil
}

// LoadSession implements sdk.AgentLoader: the session's conversation is
// replayed to the client as session updates, then it goes on. The session
// keeps the working directory it was started in.
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if err := a.addMCP(ctx, p.McpServers); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	cwd, err := a.open(ctx, string(p.SessionId))
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	send := func(u sdk.SessionUpdate) error {
		return a.client().SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: u})
	}
	if err := replay(ctx, a.Store, string(p.SessionId), cwd, send); err != nil {
		return sdk.LoadSessionResponse{}, fmt.Errorf("replay session %s: %w", p.SessionId, err)
	}
	return sdk.LoadSessionResponse{}, nil
}

// ResumeSession implements sdk.Agent: load without the replay.
func (a *Agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	if err := a.addMCP(ctx, p.McpServers); err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	_, err := a.open(ctx, string(p.SessionId))
	return sdk.ResumeSessionResponse{}, err
}

// open makes an existing session known to this connection and returns its
// working directory.
func (a *Agent) open(ctx context.Context, id string) (string, error) {
	rs, err := a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	if err != nil {
		return "", err
	}
	if len(rs) == 0 || rs[0].Type != schema.TypeSessionStarted {
		return "", unknownSession(id)
	}
	p, err := schema.Decode(rs[0].Envelope)
	if err != nil {
		return "", err
	}
	if a.Open != nil {
		if err := a.Open(ctx, id); err != nil {
			return "", err
		}
	}
	cwd := p.(schema.SessionStarted).WorkingDir
	a.track(id, cwd)
	a.Log.Info().Str("session", id).Msg("acp: session loaded")
	return cwd, nil
}

func (a *Agent) track(id, cwd string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions == nil {
		a.sessions = map[string]*state{}
	}
	if _, ok := a.sessions[id]; !ok {
		a.sessions[id] = &state{id: id, cwd: cwd, calls: map[string]toolInfo{}}
	}
}

func (a *Agent) session(id string) (*state, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	return s, ok
}

// unknownSession is the error for a session id this connection has not
// created or loaded.
func unknownSession(id string) error {
	return &sdk.RequestError{Code: -32602, Message: "Invalid params",
		Data: map[string]any{"error": fmt.Sprintf("unknown session %q: create one with session/new or load it with session/load", id)}}
}

// CloseSession implements sdk.Agent: the turn in flight stops and the
// connection forgets the session (its events stay).
func (a *Agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	id := string(p.SessionId)
	if _, ok := a.session(id); !ok {
		return sdk.CloseSessionResponse{}, unknownSession(id)
	}
	a.Turns.Stop(id, "the editor closed the session")
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
	return sdk.CloseSessionResponse{}, nil
}

// Cancel implements sdk.Agent. The SDK cancels the prompt's context, which
// stops the turn; Stop also drops what is queued.
func (a *Agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	if _, ok := a.session(string(p.SessionId)); ok {
		a.Turns.Stop(string(p.SessionId), "cancelled in the editor")
	}
	return nil
}

// Prompt implements sdk.Agent: one turn, its progress streamed as session
// updates, all of them sent before the answer to the request.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	id := string(p.SessionId)
	s, ok := a.session(id)
	if !ok {
		return sdk.PromptResponse{}, unknownSession(id)
	}
	text := promptText(p.Prompt)
	images, err := a.promptImages(ctx, p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the prompt has no text"})
	}
	conn := a.client()
	out := newOutbox(func(u sdk.SessionUpdate) {
		// Updates outlive a cancelled request: the client still wants
		// the tool calls closed.
		if err := conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
			a.Log.Debug().Err(err).Str("session", id).Msg("acp: session update not sent")
		}
	})
	a.mu.Lock()
	s.out = out
	a.mu.Unlock()
	res := a.Turns.RunTurn(ctx, id, &session.Turn{Text: text, Images: images, Observe: a.observer(s, out)})
	out.close()
	a.mu.Lock()
	s.out = nil
	clear(s.calls)
	a.mu.Unlock()
	switch {
	case errors.Is(res.Err, agent.ErrInterrupted) || (res.Err != nil && ctx.Err() != nil):
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case res.Err != nil && model.Classify(res.Err) == model.ClassContentPolicy:
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	case res.Err != nil:
		a.Log.Warn().Err(res.Err).Str("session", id).Msg("acp: turn failed")
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": "the turn failed: " + res.Err.Error()})
	}
	sid := res.SessionID
	if sid == "" {
		sid = id
	}
	return sdk.PromptResponse{StopReason: stopReason(ctx, a.Store, sid, res.TurnID)}, nil
}

// stopReason reads how turn turnID of session sid ended: its iteration
// budget ran out, or its last answer was cut by the output limit or
// withheld by the provider's filter; else the turn simply ended.
func stopReason(ctx context.Context, store events.Store, sid, turnID string) sdk.StopReason {
	rs, err := store.ReadStream(ctx, events.SessionStream(sid), events.Backward, events.End, 64)
	if err != nil {
		return sdk.StopReasonEndTurn
	}
	reason := sdk.StopReasonEndTurn
	for _, r := range rs {
		if r.TurnID != turnID {
			continue
		}
		switch r.Type {
		case schema.TypeTurnCompleted:
			if p, err := schema.Decode(r.Envelope); err == nil && p.(schema.TurnCompleted).Outcome == agent.OutcomeBudget {
				return sdk.StopReasonMaxTurnRequests
			}
		case schema.TypeAssistantMessageAdded:
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				continue
			}
			switch p.(schema.AssistantMessageAdded).FinishReason {
			case "length":
				reason = sdk.StopReasonMaxTokens
			case "content_filter":
				reason = sdk.StopReasonRefusal
			}
			return reason // the last answer of the turn decides
		}
	}
	return reason
}

// promptText is what the person sent, as the model reads it: text as it
// is, links to resources by their URI, embedded text resources inline.
func promptText(blocks []sdk.ContentBlock) string {
	var b strings.Builder
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, " [%s](%s) ", c.ResourceLink.Name, c.ResourceLink.Uri)
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			fmt.Fprintf(&b, "\n<context uri=%q>\n%s\n</context>\n", r.Uri, r.Text)
		}
	}
	return b.String()
}

// promptImages stores the prompt's image blocks; the first that is not
// base64, not an image or too large refuses the prompt, before anything
// is recorded.
func (a *Agent) promptImages(ctx context.Context, blocks []sdk.ContentBlock) ([]schema.ImageRef, error) {
	var refs []schema.ImageRef
	for i, c := range blocks {
		if c.Image == nil {
			continue
		}
		if a.Images == nil {
			return nil, errors.New("this agent takes no images")
		}
		data, err := base64.StdEncoding.DecodeString(c.Image.Data)
		if err != nil {
			return nil, fmt.Errorf("image %d: the data is not base64: %v", i+1, err)
		}
		name := fmt.Sprintf("image-%d", i+1)
		if c.Image.Uri != nil && *c.Image.Uri != "" {
			name = *c.Image.Uri
		}
		ref, err := a.Images.PutImage(ctx, data, name)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i+1, err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// SetSessionMode implements sdk.Agent; Hermes has no session modes.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(string(sdk.AgentMethodSessionSetMode))
}

// SetSessionConfigOption implements sdk.Agent; Hermes offers no
// configuration options to the editor.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(string(sdk.AgentMethodSessionSetConfigOption))
}

// ListSessions implements sdk.Agent; not offered (`hermes sessions list`
// lists them).
func (a *Agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(string(sdk.AgentMethodSessionList))
}
