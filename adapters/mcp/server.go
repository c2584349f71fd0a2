package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
)

// Options are what the MCP servers of a Hermes process need from it.
type Options struct {
	// Env is the environment stdio servers start from, before their own
	// env: entries (Hermes' own without its secrets). Nil: this
	// process's environment.
	Env func() []string
	// Dialects are those the tool schemas must satisfy (DialectsOf the
	// main provider's and the fallbacks' API modes).
	Dialects []Dialect
	// Wrap wraps each tool once per tool list (redaction, hooks).
	Wrap func(tool.Tool) tool.Tool
	// Allow is config's command_allowlist: tools of approval: true
	// servers approved "always" are added to it.
	Allow AllowList
	// ApprovalTimeout bounds the wait for a person's decision (60s).
	ApprovalTimeout time.Duration
	// CacheDir receives images, audio and binary resources of results,
	// which the model reads as a path ($HERMES_HOME/cache/mcp).
	CacheDir string
	Log      zerolog.Logger
	// Backoff is the first wait before a reconnect (1s), doubling to
	// MaxBackoff (5m).
	Backoff, MaxBackoff time.Duration
	// Version is Hermes' version, sent as the client's.
	Version string
}

// AllowList is config's command_allowlist (terminal.AllowList has the
// same methods).
type AllowList interface {
	Has(pattern string) bool
	Add(pattern string) error
}

// State is where a server's connection is.
type State string

// States of a server.
const (
	Starting     State = "starting"
	Connected    State = "connected"
	Reconnecting State = "reconnecting"
	Failed       State = "failed"
	Closed       State = "closed"
)

// Status is what `hermes mcp list` shows of a server.
type Status struct {
	Name      string
	Transport string
	State     State
	// Tools counts the tools the server gives (utility tools included).
	Tools int
	// Error is the last error: why it failed or was lost.
	Error string
	// Handshake is how long the last connection took (process start or
	// HTTP connection, and the initialize exchange).
	Handshake time.Duration
	// Since is when State was entered.
	Since time.Time
	// Attempts counts failed connections, and connections lost at once,
	// since the last one that lasted.
	Attempts int
	// Peer names the server as it introduced itself.
	Peer string
}

// Server is one configured MCP server and its connection: it connects in
// the background, reconnects with backoff when the peer dies, and keeps
// the tools the peer offers, refreshed when it says the list changed. It
// is a tools.Source (toolset mcp-<name>) and a tools.Waiter.
type Server struct {
	name string
	cfg  ServerConfig
	opts *Options
	log  zerolog.Logger

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	started  atomic.Bool
	ready    chan struct{} // closed after the first attempt
	readyOne sync.Once
	lateOne  sync.Once
	deadline time.Time
	changed  chan struct{} // the peer's tool list changed
	gen      atomic.Uint64
	stderr   *tail

	mu    sync.Mutex
	st    Status
	cur   *conn         // the last connection; its ended says whether it is live
	next  chan struct{} // closed when a new connection is up
	tools []tool.Tool
}

// conn is one connection to the peer.
type conn struct {
	cs    *sdk.ClientSession
	ended chan struct{} // closed once the connection is over
}

func (c *conn) live() bool {
	select {
	case <-c.ended:
		return false
	default:
		return true
	}
}

// NewServer returns the server of a config entry; Start connects it.
func NewServer(name string, cfg ServerConfig, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{name: name, cfg: cfg, opts: opts, log: opts.Log.With().Str("mcp_server", name).Logger(),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), changed: make(chan struct{}, 1),
		stderr: &tail{max: 4 << 10}, next: make(chan struct{})}
	s.st = Status{Name: name, Transport: cfg.Kind(), State: Starting, Since: time.Now()}
	return s
}

// Name is the server's name in config.
func (s *Server) Name() string { return s.name }

// Config is the server's entry.
func (s *Server) Config() ServerConfig { return s.cfg }

// Start connects in the background: it returns at once.
func (s *Server) Start() {
	if !s.started.CompareAndSwap(false, true) {
		return
	}
	s.deadline = time.Now().Add(s.cfg.connectTimeout())
	go s.run()
}

// Wait returns once the first connection attempt is over, or at the
// connect deadline, whichever is first (tools.Waiter).
func (s *Server) Wait() {
	if !s.started.Load() {
		return
	}
	select {
	case <-s.ready:
		return
	default:
	}
	t := time.NewTimer(time.Until(s.deadline))
	defer t.Stop()
	select {
	case <-s.ready:
	case <-t.C:
		s.lateOne.Do(func() {
			s.log.Warn().Dur("connect_timeout", s.cfg.connectTimeout()).
				Msg("MCP server not connected within connect_timeout: going on without its tools; they come when it connects")
		})
	}
}

// Tools returns the tools the server offers now (tools.Source). While it
// reconnects, the last list stays: the model keeps seeing the same tools,
// and a call waits for the connection.
func (s *Server) Tools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tool.Tool(nil), s.tools...)
}

// Generation changes whenever Tools does (tools.Source).
func (s *Server) Generation() uint64 { return s.gen.Load() }

// Status reports the server's state.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Tools = len(s.tools)
	return st
}

// Close disconnects and stops the server's process, and any process it
// started.
func (s *Server) Close() error {
	s.cancel()
	if s.started.Load() {
		<-s.done
	}
	s.set(func(st *Status) { st.State = Closed })
	return nil
}

func (s *Server) set(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.st.State
	f(&s.st)
	if s.st.State != prev {
		s.st.Since = time.Now()
	}
}

func (s *Server) markReady() { s.readyOne.Do(func() { close(s.ready) }) }

func (s *Server) backoff(attempt int) time.Duration {
	base, top := s.opts.Backoff, s.opts.MaxBackoff
	if base <= 0 {
		base = time.Second
	}
	if top <= 0 {
		top = 5 * time.Minute
	}
	d := base
	for i := 1; i < attempt && d < top; i++ {
		d *= 2
	}
	return min(d, top)
}

func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// stable is how long a connection must last for its loss not to count as
// a failure in the backoff.
const stable = 30 * time.Second

// run connects, serves, and reconnects until Close.
func (s *Server) run() {
	defer close(s.done)
	defer s.markReady()
	failures := 0
	for {
		cs, proc, end, err := s.connect(s.ctx)
		if s.ctx.Err() != nil {
			if cs != nil {
				cs.Close()
				end()
			}
			killGroup(proc)
			return
		}
		if err != nil {
			killGroup(proc)
			failures++
			wait := s.backoff(failures)
			s.log.Warn().Err(err).Int("attempt", failures).Dur("retry_in", wait).Msg("MCP server failed to connect")
			s.set(func(st *Status) { st.State, st.Error, st.Attempts = Failed, err.Error(), failures })
			s.markReady()
			if !s.sleep(wait) {
				return
			}
			continue
		}
		since := time.Now()
		c := &conn{cs: cs, ended: make(chan struct{})}
		// Connected before the connection is handed to waiting calls: a
		// call made on it must find the status saying so.
		s.set(func(st *Status) { st.State = Connected })
		s.mu.Lock()
		s.cur = c
		close(s.next)
		s.next = make(chan struct{})
		s.mu.Unlock()
		s.markReady()
		lost := s.serve(c)
		// A connection that lasted counts as a success; one lost at once
		// (a server that dies at its first call) backs off as a failure.
		if time.Since(since) >= stable {
			failures = 0
		}
		failures++
		end()
		killGroup(proc)
		if s.ctx.Err() != nil {
			return
		}
		msg := "the connection closed"
		if lost != nil && !errors.Is(lost, sdk.ErrConnectionClosed) {
			msg = fmt.Sprintf("the connection closed: %v", lost)
		}
		if t := s.stderr.last(); t != "" && s.cfg.Kind() == Stdio {
			msg += "; its stderr ends with: " + t
		}
		s.log.Warn().Str("reason", msg).Msg("MCP server lost; reconnecting")
		s.set(func(st *Status) { st.State, st.Error, st.Attempts = Reconnecting, msg, failures })
		if !s.sleep(s.backoff(failures)) {
			return
		}
	}
}

// serve keeps a connection until it ends, refreshing the tools when the
// peer says they changed.
func (s *Server) serve(c *conn) error {
	var lost error
	go func() {
		lost = c.cs.Wait()
		close(c.ended)
	}()
	for {
		select {
		case <-c.ended:
			return lost
		case <-s.changed:
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.connectTimeout())
			err := s.refresh(ctx, c.cs)
			cancel()
			if err != nil && s.ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("MCP server: listing its changed tools failed")
			}
		case <-s.ctx.Done():
			c.cs.Close()
			<-c.ended
			return nil
		}
	}
}

// connect starts the transport, does the handshake and lists the tools,
// all within connect_timeout. The context the transport is connected
// with lives as long as the connection (the SSE transport's stream is a
// request made with it); end is what ends it.
func (s *Server) connect(parent context.Context) (cs *sdk.ClientSession, proc *exec.Cmd, end func(), err error) {
	ctx, cancel := context.WithCancel(parent)
	var late atomic.Bool
	timer := time.AfterFunc(s.cfg.connectTimeout(), func() { late.Store(true); cancel() })
	defer func() {
		if err != nil {
			timer.Stop()
			cancel()
		}
	}()
	t, proc, err := s.transport()
	if err != nil {
		return nil, nil, nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "hermes", Version: first(s.opts.Version, "dev")}, &sdk.ClientOptions{
		// No roots, sampling or elicitation: Hermes offers none of them.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.changed <- struct{}{}:
			default:
			}
		},
		KeepAlive: s.cfg.keepAlive(),
	})
	start := time.Now()
	cs, err = client.Connect(ctx, t, nil)
	took := time.Since(start)
	if err != nil {
		return nil, proc, nil, s.explain(late.Load(), proc, "connect", err)
	}
	if err = s.refresh(ctx, cs); err != nil {
		cs.Close()
		return nil, proc, nil, s.explain(late.Load(), proc, "list tools", err)
	}
	if !timer.Stop() {
		cs.Close()
		return nil, proc, nil, s.explain(true, proc, "list tools", ctx.Err())
	}
	s.set(func(st *Status) {
		st.Handshake, st.Error = took, ""
		if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
			st.Peer = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
		}
	})
	return cs, proc, cancel, nil
}

// explain turns a connection failure into what a person can act on.
func (s *Server) explain(late bool, proc *exec.Cmd, what string, err error) error {
	if late {
		err = fmt.Errorf("no answer within connect_timeout %s", s.cfg.connectTimeout())
	}
	msg := fmt.Sprintf("%s: %v", what, err)
	if proc != nil && proc.ProcessState != nil && !late {
		msg = fmt.Sprintf("%s: the server exited (%s) before answering", what, proc.ProcessState)
	}
	if s.cfg.Kind() == Stdio {
		if t := s.stderr.last(); t != "" {
			msg += "; its stderr ends with: " + t
		}
	}
	return errors.New(msg)
}

// transport builds a fresh transport: a new process for stdio.
func (s *Server) transport() (sdk.Transport, *exec.Cmd, error) {
	switch s.cfg.Kind() {
	case HTTP:
		return &sdk.StreamableClientTransport{Endpoint: expand(s.cfg.URL), HTTPClient: s.httpClient()}, nil, nil
	case SSE:
		return &sdk.SSEClientTransport{Endpoint: expand(s.cfg.URL), HTTPClient: s.httpClient()}, nil, nil
	}
	args := make([]string, len(s.cfg.Args))
	for i, a := range s.cfg.Args {
		args[i] = expand(a)
	}
	cmd := exec.Command(expand(s.cfg.Command), args...)
	cmd.Env = s.environ()
	s.stderr.reset()
	cmd.Stderr = s.stderr
	ownGroup(cmd)
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, cmd, nil
}

// environ is the child's environment: Hermes' without its secrets, then
// the server's own env (which wins).
func (s *Server) environ() []string {
	base := os.Environ()
	if s.opts.Env != nil {
		base = s.opts.Env()
	}
	if len(s.cfg.Env) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(s.cfg.Env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := s.cfg.Env[k]; !mine {
			out = append(out, kv)
		}
	}
	for k, v := range s.cfg.Env {
		out = append(out, k+"="+expand(v))
	}
	return out
}

func (s *Server) httpClient() *http.Client {
	h := http.Header{}
	for k, v := range s.cfg.Headers {
		h.Set(k, expand(v))
	}
	return &http.Client{Transport: headers{base: http.DefaultTransport, h: h}}
}

// headers adds a server's configured headers to every request.
type headers struct {
	base http.RoundTripper
	h    http.Header
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}

// session returns the live connection, waiting up to connect_timeout for
// a reconnect.
func (s *Server) session(ctx context.Context) (*conn, error) {
	if !s.started.Load() {
		return nil, fmt.Errorf("MCP server %s is not started", s.name)
	}
	t := time.NewTimer(s.cfg.connectTimeout())
	defer t.Stop()
	for {
		s.mu.Lock()
		c, next := s.cur, s.next
		s.mu.Unlock()
		if c != nil && c.live() {
			return c, nil
		}
		select {
		case <-next:
			continue
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, fmt.Errorf("MCP server %s is closed", s.name)
		case <-t.C:
		}
		st := s.Status()
		return nil, fmt.Errorf("MCP server %s is not connected (%s: %s); it is retried in the background, `hermes mcp test %s` shows why it fails",
			s.name, st.State, st.Error, s.name)
	}
}

// call runs f on the live connection within the server's timeout, and
// turns what can go wrong into an error the model can act on. A call
// the connection refused before sending it (it had just broken) is made
// again, once, on the next connection.
func (s *Server) call(ctx context.Context, what string, f func(context.Context, *sdk.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		c, err := s.session(ctx)
		if err != nil {
			return err
		}
		err = s.callOn(ctx, c, what, f)
		if errors.Is(err, errUnsent) && attempt == 0 {
			c.cs.Close()
			select {
			case <-c.ended:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if errors.Is(err, errUnsent) {
			return fmt.Errorf("MCP server %s: the connection is closed; it is being reconnected", s.name)
		}
		return err
	}
}

// errUnsent marks a call the connection refused before sending it.
var errUnsent = errors.New("not sent")

func (s *Server) callOn(ctx context.Context, c *conn, what string, f func(context.Context, *sdk.ClientSession) error) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	err := f(cctx, c.cs)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("MCP server %s: %s timed out after %s (mcp_servers.%s.timeout); the call was cancelled", s.name, what, s.cfg.timeout(), s.name)
	}
	// The SDK says ErrConnectionClosed only of calls it did not send, and
	// ErrSessionMissing of calls an HTTP peer refused for not knowing the
	// session (it restarted): neither ran.
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		return errUnsent
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fmt.Errorf("MCP server %s: %s: %s", s.name, what, rpc.Message)
	}
	// Anything else may be the connection: if the peer no longer answers
	// a ping, drop it and let the run loop reconnect.
	if c.live() {
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), min(5*time.Second, s.cfg.connectTimeout()))
		alive := c.cs.Ping(pctx, nil) == nil
		pcancel()
		if alive {
			return fmt.Errorf("MCP server %s: %s: %v", s.name, what, err)
		}
		go c.cs.Close()
	}
	msg := fmt.Sprintf("MCP server %s: the connection broke during %s (%v); it is being reconnected", s.name, what, err)
	if t := s.stderr.last(); t != "" && s.cfg.Kind() == Stdio {
		msg += "; its stderr ends with: " + t
	}
	return errors.New(msg)
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// tail keeps the end of a child's stderr, for error messages.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = nil
}

// last is the last few lines, on one line.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	out := strings.TrimSpace(strings.Join(lines, " | "))
	if len(out) > 400 {
		out = "…" + out[len(out)-400:]
	}
	return out
}
