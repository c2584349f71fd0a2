// Package apiserver is the gateway's OpenAI-compatible HTTP front door: a
// gateway Platform named "api" whose requests (/v1/chat/completions,
// /v1/responses) become the router's inbound messages and whose answers
// come back through Send, plus read-only views of the sessions (/api/…).
// The agent runs its own tools on the server's side; a client talks to
// Hermes as it would to a model.
package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/schema"
)

// Platform is the name of the API server's platform: the source of the
// sessions it creates and the suffix of its outbound topic.
const Platform = "api"

// Alias is the model name that means "the agent as configured"; any other
// model a request names is used for that turn instead.
const Alias = "hermes-agent"

// SessionHeader carries the session a request continues (request) and the
// session that answered (response).
const SessionHeader = "X-Hermes-Session-Id"

// Options configure a Server.
type Options struct {
	// Host and Port to listen on (default 127.0.0.1:8642; port 0 picks a
	// free one).
	Host string
	Port int
	// Key is the bearer key every route but /health requires. It may be
	// empty only on a loopback host.
	Key string
	// CORSOrigins lists the origins browsers may call from ("*": any).
	// None by default.
	CORSOrigins []string
	// Model is the configured model, listed by /v1/models beside Alias.
	// A turn runs on it whatever model the client names, unless the name
	// is one of ModelRoutes.
	Model string
	// ModelRoutes maps the names a client may send as a request's model
	// to the model the turn runs on (the allow-list); /v1/models lists
	// them.
	ModelRoutes map[string]string
	// Archive serves /api/sessions… and checks the session a request
	// names; nil turns those routes off (501).
	Archive Archive
	// Search serves /api/search; nil turns it off (501).
	Search Searcher
	// Sessions creates, titles and deletes sessions (POST /api/sessions,
	// PATCH and DELETE /api/sessions/{id}) and creates the sessions of
	// runs; nil turns those off (501).
	Sessions SessionControl
	// Chats reads the gateway's chat streams, which tell a queued or
	// refused run (GET /v1/runs/{id}); nil reads only the sessions.
	Chats ChatLog
	// Cron serves /api/jobs; nil turns it off (501).
	Cron *Cron
	// Catalog serves /v1/skills and /v1/toolsets; nil turns them off
	// (501).
	Catalog Catalog
	// Dashboard, when set, serves the web dashboard under /dashboard/ with
	// the same key (its Key and Chat are filled in: a chat from the
	// dashboard is a turn through this server's chat route). It needs a
	// key.
	Dashboard *dashboard.Options
	// Responses keeps the ids of deleted responses; nil turns DELETE
	// /v1/responses/{id} off (501).
	Responses ResponseLog
	// Stopper stops the turn of a client that went away; nil lets turns
	// run to their end (their answers stay in the session).
	Stopper Stopper
	// Images keeps the images of image_url and input_image parts (data:
	// URLs); nil refuses them.
	Images Images
	// MaxBodyBytes bounds a request body, images and resent history
	// included (default DefaultMaxBodyBytes, 32 MiB when Images is set:
	// an image may be 20 MiB).
	MaxBodyBytes int64
	// MaxTextBytes bounds the text sent to the agent, history included
	// (default 960 KiB, the router's limit for verified front doors).
	MaxTextBytes int
	// MaxInFlight bounds the turn requests (chat completions, responses)
	// open at once (default DefaultMaxInFlight): one more is answered 429
	// with Retry-After, so that a saturated gateway or cluster says so
	// instead of letting every answer wait longer.
	MaxInFlight int
	// TurnTimeout bounds how long a request waits for its answer
	// (default 30 minutes); then the turn is stopped and the client gets
	// a 504.
	TurnTimeout time.Duration
	// KeepAlive is the interval of SSE comments on quiet streams (default
	// 15 s), so that proxies keep long turns open.
	KeepAlive time.Duration
	// ShutdownGrace is how long a stop waits for requests in flight before
	// closing their connections (default 10 s).
	ShutdownGrace time.Duration
	Log           zerolog.Logger
	// MediaDir holds the files replies name as MEDIA:<path> (the media
	// cache): /v1/media/ serves them and answers link to them ("": none).
	MediaDir string
}

// Stopper interrupts a session's turn in flight (the session manager).
type Stopper interface {
	Stop(sessionID, reason string)
}

// Server is the API server. Create it with New; the gateway's Served runs
// it (Run) and delivers the router's answers to it (Send).
type Server struct {
	opts    Options
	log     zerolog.Logger
	keyHash [32]byte
	handler http.Handler
	started time.Time

	dash      *dashboard.Handler
	inbox     atomic.Pointer[gw.Inbox]
	corr      *correlation
	runs      runBook
	connected atomic.Bool
	closing   atomic.Bool

	inFlight atomic.Int64
	// turnEWMA is a moving average of how long turn requests took (ns),
	// which Retry-After is made from.
	turnEWMA atomic.Int64

	addrMu    sync.Mutex
	addr      string
	listening chan struct{}
	listenOne sync.Once
}

// ErrKeyRequired is returned by New for a host other than loopback with no
// key: the agent runs commands on this machine, so nobody may reach it
// from the network without one.
var ErrKeyRequired = errors.New("platforms.api_server: a key is required to listen on a non-loopback host: set API_SERVER_KEY (or platforms.api_server.key), or listen on 127.0.0.1")

// New checks opts and returns a Server that listens once Run is called.
func New(opts Options) (*Server, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("platforms.api_server.port %d: not a port", opts.Port)
	}
	if opts.Key == "" && !loopback(opts.Host) {
		return nil, fmt.Errorf("%w (host %q)", ErrKeyRequired, opts.Host)
	}
	for _, o := range opts.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return nil, fmt.Errorf("platforms.api_server.cors_origins: %q is not an origin (scheme://host[:port]) or *", o)
		}
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
		if opts.Images != nil {
			opts.MaxBodyBytes = maxImageBodyBytes
		}
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = 960 << 10
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.TurnTimeout <= 0 {
		opts.TurnTimeout = 30 * time.Minute
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	s := &Server{opts: opts, log: opts.Log.With().Str("platform", Platform).Logger(), started: time.Now(),
		corr: newCorrelation(), listening: make(chan struct{})}
	if opts.Key != "" {
		s.keyHash = sha256.Sum256([]byte(opts.Key))
	}
	if opts.Dashboard != nil {
		if opts.Key == "" {
			return nil, fmt.Errorf("platforms.api_server.dashboard: %w", dashboard.ErrNoKey)
		}
		d := *opts.Dashboard
		d.Key, d.Chat = opts.Key, s
		h, err := dashboard.New(d)
		if err != nil {
			return nil, err
		}
		s.dash = h
	}
	s.handler = s.routes()
	return s, nil
}

// loopback reports whether host only answers this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Name is the platform's name.
func (s *Server) Name() string { return Platform }

// Connected reports whether the server is listening.
func (s *Server) Connected() bool { return s.connected.Load() }

// Listening is closed once the server listens the first time.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Addr is the address the server listens on ("" before Run listens).
func (s *Server) Addr() string {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.addr
}

// Run listens and serves until ctx ends; then it waits up to ShutdownGrace
// for requests in flight. Turns whose clients are cut off then run on to
// their end: the gateway drains them.
func (s *Server) Run(ctx context.Context, in gw.Inbox) error {
	s.inbox.Store(&in)
	ln, err := net.Listen("tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)))
	if err != nil {
		return fmt.Errorf("api server: listen: %w", err)
	}
	srv := &http.Server{
		Handler: s.handler,
		// No read or write timeout for the whole request: a turn may take
		// minutes, and a read deadline would look like a client that left.
		// The body has its own deadline (see decode).
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(s.log, "", 0),
	}
	if s.dash != nil {
		// Live streams end at once on a stop, not after ShutdownGrace.
		srv.RegisterOnShutdown(s.dash.Close)
	}
	s.addrMu.Lock()
	s.addr = ln.Addr().String()
	s.addrMu.Unlock()
	s.closing.Store(false)
	s.connected.Store(true)
	s.listenOne.Do(func() { close(s.listening) })
	if s.opts.Key == "" {
		s.log.Warn().Str("addr", ln.Addr().String()).Msg("API server listening on loopback WITHOUT a key: any local program can use the agent; set API_SERVER_KEY to require one")
	} else {
		s.log.Info().Str("addr", ln.Addr().String()).Strs("cors_origins", s.opts.CORSOrigins).Msg("API server listening (bearer key required)")
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		s.connected.Store(false)
		return fmt.Errorf("api server: %w", err)
	}
	s.closing.Store(true)
	s.connected.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-served
	if s.dash != nil {
		s.dash.Close()
	}
	return nil
}

// Dashboard is the dashboard this server serves (nil if none).
func (s *Server) Dashboard() *dashboard.Handler { return s.dash }

// Continue sends text to session as a turn through the chat route, as a
// client would, and waits for the answer (the dashboard's chat form).
func (s *Server) Continue(ctx context.Context, session, text string) error {
	req, err := s.selfRequest(ctx, session, text, false)
	if err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("continue session %s: %d %s", session, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	return nil
}

// Start sends text as the first turn of a new session through the chat
// route, as a client would, calls started with the new session's id as
// soon as the turn begins, and waits for the answer (the dashboard's "new
// chat"). The request streams, since a streamed answer names its session
// before the answer comes.
func (s *Server) Start(ctx context.Context, text string, started func(session string)) error {
	req, err := s.selfRequest(ctx, "", text, true)
	if err != nil {
		return err
	}
	w := &startWriter{h: http.Header{}, started: started}
	s.handler.ServeHTTP(w, req)
	switch {
	case w.code != http.StatusOK:
		return fmt.Errorf("start a session: %d %s", w.code, strings.TrimSpace(w.body.String()))
	case w.session == "":
		return errors.New("start a session: the chat route named no session")
	case strings.Contains(w.body.String(), `data: {"error":`):
		return fmt.Errorf("session %s: the first turn failed: %s", w.session, strings.TrimSpace(w.body.String()))
	}
	return nil
}

// selfRequest is a chat request from this process, with the server's key.
func (s *Server) selfRequest(ctx context.Context, session, text string, stream bool) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"model": Alias, "stream": stream, "messages": []map[string]string{{"role": "user", "content": text}}})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = "127.0.0.1:0"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.opts.Key)
	if session != "" {
		req.Header.Set(SessionHeader, session)
	}
	return req, nil
}

// startWriter takes Start's streamed answer in memory and reports the
// session its headers name when they are written.
type startWriter struct {
	h       http.Header
	code    int
	session string
	body    bytes.Buffer
	started func(string)
}

func (w *startWriter) Header() http.Header { return w.h }

func (w *startWriter) WriteHeader(code int) {
	if w.code != 0 {
		return
	}
	w.code = code
	if w.session = w.h.Get(SessionHeader); code == http.StatusOK && w.session != "" && w.started != nil {
		w.started(w.session)
	}
}

func (w *startWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(b)
}

// Flush is what the stream asks for after each event: nothing to do.
func (w *startWriter) Flush() {}

// Send takes one of the router's messages for this platform: typing (a
// turn began), delta (a piece of a streamed answer), approval (a tool's
// question) or reply (the answer). It never waits for an HTTP client.
func (s *Server) Send(_ context.Context, out schema.Outbound) ([]string, error) {
	return s.corr.deliver(out, func(session string) { s.stop(session) })
}

func (s *Server) stop(session string) {
	if s.opts.Stopper == nil || session == "" || s.closing.Load() {
		return
	}
	s.log.Debug().Str("session", session).Msg("stopping the turn of a client that left")
	s.opts.Stopper.Stop(session, "the API client disconnected")
}

// routes builds the handler: CORS, then the key, then the routes.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", s.only(http.MethodGet, s.health))
	mux.HandleFunc("/v1/health", s.only(http.MethodGet, s.health)) // upstream's alias
	mux.HandleFunc("/v1/models", s.only(http.MethodGet, s.models))
	mux.HandleFunc("/v1/chat/completions", s.only(http.MethodPost, s.admit(s.chatCompletions)))
	mux.HandleFunc("/v1/responses", s.only(http.MethodPost, s.admit(s.responses)))
	mux.HandleFunc("/v1/responses/{id}", s.responseByID)
	mux.HandleFunc("/v1/approvals", s.only(http.MethodGet, s.listApprovals))
	mux.HandleFunc("/v1/approvals/{session}", s.approvals)
	mux.HandleFunc("/v1/capabilities", s.only(http.MethodGet, s.capabilities))
	mux.HandleFunc("/v1/skills", s.only(http.MethodGet, s.listSkills))
	mux.HandleFunc("/v1/skills/{name}", s.only(http.MethodGet, s.showSkill))
	mux.HandleFunc("/v1/toolsets", s.only(http.MethodGet, s.listToolsets))
	mux.HandleFunc("/v1/runs", s.only(http.MethodPost, s.startRun))
	mux.HandleFunc("/v1/runs/{id}", s.only(http.MethodGet, s.getRun))
	mux.HandleFunc("/v1/runs/{id}/events", s.only(http.MethodGet, s.runEvents))
	mux.HandleFunc("/v1/runs/{id}/stop", s.only(http.MethodPost, s.stopRun))
	mux.HandleFunc("/v1/runs/{id}/approval", s.only(http.MethodPost, s.runApproval))
	mux.HandleFunc("/api/jobs", s.jobsRoot)
	mux.HandleFunc("/api/jobs/{id}", s.jobByID)
	mux.HandleFunc("/api/jobs/{id}/{action}", s.only(http.MethodPost, s.jobAction))
	mux.HandleFunc("/api/sessions", s.sessionsRoot)
	mux.HandleFunc("/api/sessions/{id}", s.sessionByID)
	mux.HandleFunc("/api/sessions/{id}/messages", s.only(http.MethodGet, s.sessionMessages))
	mux.HandleFunc("/api/sessions/{id}/chat", s.only(http.MethodPost, s.admit(s.sessionChat)))
	mux.HandleFunc("/api/sessions/{id}/chat/stream", s.only(http.MethodPost, s.admit(s.sessionChatStream)))
	mux.HandleFunc("/api/sessions/{id}/events", s.only(http.MethodGet, s.sessionEvents))
	mux.HandleFunc("/api/sessions/{id}/fork", s.only(http.MethodPost, s.forkSession))
	mux.HandleFunc("/api/search", s.only(http.MethodGet, s.search))
	mux.HandleFunc("/v1/media/{path...}", s.only(http.MethodGet, s.media))
	if s.dash != nil {
		// The dashboard checks the key itself: a bearer header, or the
		// cookie of a login with it.
		mux.Handle(dashboard.Prefix+"/", s.dash)
		mux.Handle(dashboard.Prefix, s.dash)
	}
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			fail(w, http.StatusNotFound, notFoundError, "unknown_url", fmt.Sprintf("no route %s %s: see /v1/capabilities", r.Method, r.URL.Path))
			return
		}
		mux.ServeHTTP(w, r)
	})
	return s.hosts(s.cors(s.auth(routed)))
}

// hosts refuses, when the server runs without a key, a request whose Host
// is not a loopback name or address. A web page on another site can point
// its own name at 127.0.0.1 (DNS rebinding) and then call the server from
// the victim's browser as a same-origin page: the Host it sends is still
// the page's name, and nothing else tells such a request from a local
// client's. With a key, the key stops it.
func (s *Server) hosts(next http.Handler) http.Handler {
	if s.opts.Key != "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			fail(w, http.StatusForbidden, permissionError, "host_not_allowed", fmt.Sprintf(
				"Host %q is not a loopback name: this API server runs without a key and answers only requests addressed to localhost, 127.0.0.1 or [::1]; set API_SERVER_KEY to serve other names",
				r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header (name or address, with or
// without a port) names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(hostport, "[") != strings.HasSuffix(hostport, "]") {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	return host != "" && loopback(host)
}

// only answers other methods with 405.
func (s *Server) only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		h(w, r)
	}
}

// auth requires the bearer key on every route but /health (and its
// alias /v1/health).
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Key == "" || r.URL.Path == "/health" || r.URL.Path == "/v1/health" || s.dash != nil && (r.URL.Path == dashboard.Prefix || strings.HasPrefix(r.URL.Path, dashboard.Prefix+"/")) {
			next.ServeHTTP(w, r)
			return
		}
		h := r.Header.Get("Authorization")
		scheme, key, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || key == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hermes"`)
			fail(w, http.StatusUnauthorized, authError, "missing_api_key", "no API key: send Authorization: Bearer <API_SERVER_KEY>")
			return
		}
		// Hashes have one length: the comparison takes the same time
		// whatever was sent.
		sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
		if subtle.ConstantTimeCompare(sum[:], s.keyHash[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hermes", error="invalid_token"`)
			fail(w, http.StatusUnauthorized, authError, "invalid_api_key", "invalid API key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors lets the configured origins call from a browser; preflights are
// answered before the key is checked (browsers send none with them).
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		allowed := slices.Contains(s.opts.CORSOrigins, "*") || slices.Contains(s.opts.CORSOrigins, origin)
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !allowed {
			if preflight {
				fail(w, http.StatusForbidden, invalidRequest, "origin_not_allowed", "origin "+origin+" is not in platforms.api_server.cors_origins")
				return
			}
			next.ServeHTTP(w, r) // no CORS headers: the browser keeps the answer from the page
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", SessionHeader)
		if preflight {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "platform": Platform})
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	data := []model{{ID: Alias, Object: "model", Created: s.started.Unix(), OwnedBy: "hermes"}}
	if s.opts.Model != "" && s.opts.Model != Alias {
		data = append(data, model{ID: s.opts.Model, Object: "model", Created: s.started.Unix(), OwnedBy: "hermes"})
	}
	routes := slices.Sorted(maps.Keys(s.opts.ModelRoutes))
	for _, name := range routes {
		if name != Alias && name != s.opts.Model {
			data = append(data, model{ID: name, Object: "model", Created: s.started.Unix(), OwnedBy: "hermes"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// decode reads a JSON body into v, answering the client itself (and
// returning false) when the body is too large, not JSON, or not UTF-8.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		fail(w, http.StatusUnsupportedMediaType, invalidRequest, "unsupported_media_type", fmt.Sprintf("Content-Type %q: send application/json", ct))
		return false
	}
	// The server has no read timeout (turns are long): the body has one.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	_ = rc.SetReadDeadline(time.Time{})
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, invalidRequest, "request_too_large", fmt.Sprintf("the request body is over %d bytes", s.opts.MaxBodyBytes))
		return false
	case err != nil:
		fail(w, http.StatusBadRequest, invalidRequest, "unreadable_body", "could not read the request body: "+err.Error())
		return false
	case !utf8.Valid(body):
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_utf8", "the request body is not valid UTF-8")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_json", "the request body is not valid JSON for this route: "+err.Error())
		return false
	}
	return true
}

// newID returns a fresh random id of 24 hex digits.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DefaultMaxInFlight is the default of Options.MaxInFlight.
const DefaultMaxInFlight = 256

// admit runs h for a turn request when fewer than MaxInFlight are open;
// otherwise it answers 429 with a Retry-After of about one turn's time.
func (s *Server) admit(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n := s.inFlight.Add(1); n > int64(s.opts.MaxInFlight) {
			s.inFlight.Add(-1)
			after := s.retryAfter()
			w.Header().Set("Retry-After", strconv.Itoa(after))
			fail(w, http.StatusTooManyRequests, rateLimitError, "server_busy",
				fmt.Sprintf("the agent is at its limit of %d requests in flight (platforms.api_server.max_in_flight): retry in %d s", s.opts.MaxInFlight, after))
			return
		}
		began := time.Now()
		defer func() {
			s.inFlight.Add(-1)
			s.observeTurn(time.Since(began))
		}()
		h(w, r)
	}
}

// observeTurn folds one request's duration into the moving average.
func (s *Server) observeTurn(d time.Duration) {
	for {
		old := s.turnEWMA.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if s.turnEWMA.CompareAndSwap(old, next) {
			return
		}
	}
}

// retryAfter is the seconds a refused client waits: about one turn, at
// least 1 and at most 30.
func (s *Server) retryAfter() int {
	secs := int((time.Duration(s.turnEWMA.Load()) + time.Second - 1) / time.Second)
	return min(max(secs, 1), 30)
}
