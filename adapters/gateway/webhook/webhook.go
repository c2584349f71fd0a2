// Package webhook is the gateway's front door for signed HTTP webhooks
// (GitHub, CI systems, alerting, anything that can sign a POST): it serves
// POST /webhooks/{route} on a listener of its own, checks each request's
// HMAC-SHA256 signature and refuses replays, renders the route's prompt
// template over the payload, and hands the text to the router as a
// verified message. The answer goes where the route says: to a callback
// URL (a signed POST), to a chat of another platform, or nowhere (it stays
// in the session).
//
// The adapter holds no store: what it refuses (a bad signature, a replay)
// is published as an Inbound of kind refused, which the router records in
// the gateway-refused stream.
package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Name is the platform's name: the source of its sessions.
const Name = "webhook"

// Defaults.
const (
	DefaultMaxBody = 1 << 20
	// DefaultReplayMemory is how long accepted delivery ids are kept in
	// memory; DefaultReplayEntries bounds how many.
	DefaultReplayMemory  = 24 * time.Hour
	DefaultReplayEntries = 100_000
	// DefaultRefusalsPerMinute bounds the refusals recorded as events: an
	// unsigned flood must not fill the event store. The others are logged.
	DefaultRefusalsPerMinute = 60
	defaultCallbackTimeout   = 15 * time.Second
)

// Session modes of a route.
const (
	// SessionPerDelivery gives every delivery a session of its own (the
	// default): a CI run or an alert is a task on its own, and deliveries
	// run side by side.
	SessionPerDelivery = "delivery"
	// SessionPerRoute sends every delivery of a route to one session, in
	// order: the agent sees the earlier ones.
	SessionPerRoute = "route"
)

// Route is one endpoint, POST /webhooks/{Name}.
type Route struct {
	Name string
	// Secret signs the route's requests and its callbacks (required).
	Secret string
	// Prompt is a text/template over the decoded payload ({{.field}});
	// missing fields render empty. Functions: route, delivery, event, get
	// (a dotted path, "" when missing), json, default, truncate. Empty:
	// the payload itself, quoted.
	Prompt string
	// Deliver is where answers go: "" (kept in the session), PLATFORM:CHAT
	// (a chat of another platform), or an http(s) callback URL.
	Deliver string
	// Session is SessionPerDelivery (default) or SessionPerRoute.
	Session string
	// Images are dotted paths in the payload holding pictures for the
	// model: a data: URL (data:image/png;base64,…) or a list of them.
	// They are kept in CacheDir and go with the prompt; a value that is
	// not a base64 data: URL refuses the delivery (422), saying which.
	Images []string
}

// Config configures the adapter.
type Config struct {
	// Addr is the listener's host:port ("127.0.0.1:8644"; port 0 picks one).
	Addr   string
	Routes []Route
	// MaxBody bounds a request's body (default 1 MiB); larger ones get 413.
	MaxBody int64
	// CacheDir keeps the pictures of routes with Images (required for
	// them).
	CacheDir string
	// Window is how far a signed timestamp may be from now (default 5m).
	Window time.Duration
	// ReplayMemory and ReplayEntries bound the set of delivery ids seen.
	ReplayMemory  time.Duration
	ReplayEntries int
	// RefusalsPerMinute bounds the refusals recorded (default 60).
	RefusalsPerMinute int
	// Forward publishes an answer for another platform's chat (routes that
	// deliver to PLATFORM:CHAT need it): the gateway wires it to that
	// platform's outbound topic.
	Forward func(ctx context.Context, out schema.Outbound) error
	// Client makes the callbacks (default: a 15 s timeout).
	Client *http.Client
	// Now is the clock (tests).
	Now func() time.Time
	Log zerolog.Logger
}

type route struct {
	Route
	prompt *template.Template
	// target: "" none, "url" or "platform".
	target           string
	platform, chatID string
}

// Platform is the webhook front door. Create it with New.
type Platform struct {
	cfg    Config
	routes map[string]*route
	seen   *seenSet
	refuse *bucket
	log    zerolog.Logger

	inbox     atomic.Pointer[gw.Inbox]
	connected atomic.Bool
	readyOnce sync.Once
	ready     chan struct{}
	addr      atomic.Value // string
	mux       *http.ServeMux
}

var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// New checks cfg and returns the adapter. Errors name the route at fault.
func New(cfg Config) (*Platform, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.ReplayMemory <= 0 {
		cfg.ReplayMemory = DefaultReplayMemory
	}
	if cfg.ReplayEntries <= 0 {
		cfg.ReplayEntries = DefaultReplayEntries
	}
	if cfg.RefusalsPerMinute <= 0 {
		cfg.RefusalsPerMinute = DefaultRefusalsPerMinute
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: defaultCallbackTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Routes) == 0 {
		return nil, errors.New("platforms.webhook.routes: no route configured")
	}
	p := &Platform{cfg: cfg, routes: map[string]*route{}, seen: newSeenSet(cfg.ReplayMemory, cfg.ReplayEntries),
		refuse: newBucket(cfg.RefusalsPerMinute, time.Minute), log: cfg.Log.With().Str("platform", Name).Logger(),
		ready: make(chan struct{})}
	for _, r := range cfg.Routes {
		key := "platforms.webhook.routes." + r.Name
		if !routeName.MatchString(r.Name) {
			return nil, fmt.Errorf("%s: a route name is letters, digits, '.', '_' and '-' (at most 64)", key)
		}
		if _, dup := p.routes[r.Name]; dup {
			return nil, fmt.Errorf("%s: defined twice", key)
		}
		if r.Secret == "" {
			return nil, fmt.Errorf("%s.secret: empty; set it (or WEBHOOK_SECRET): unsigned webhooks are never accepted", key)
		}
		rt := &route{Route: r}
		switch rt.Session {
		case "":
			rt.Session = SessionPerDelivery
		case SessionPerDelivery, SessionPerRoute:
		default:
			return nil, fmt.Errorf("%s.session %q: use delivery or route", key, r.Session)
		}
		var err error
		if rt.prompt, err = compilePrompt(r.Name, r.Prompt); err != nil {
			return nil, fmt.Errorf("%s.prompt: %w", key, err)
		}
		switch d := strings.TrimSpace(r.Deliver); {
		case d == "":
		case strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://"):
			u, err := url.Parse(d)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("%s.deliver %q: not a URL", key, d)
			}
			rt.target, rt.Deliver = "url", d
		default:
			// The chat may hold colons itself (Matrix room ids do).
			pl, chat, ok := strings.Cut(d, ":")
			if !ok || pl == "" || chat == "" {
				return nil, fmt.Errorf("%s.deliver %q: use PLATFORM:CHAT (telegram:12345) or an http(s) callback URL", key, d)
			}
			if pl == Name {
				return nil, fmt.Errorf("%s.deliver %q: a webhook cannot deliver to a webhook route", key, d)
			}
			if cfg.Forward == nil {
				return nil, fmt.Errorf("%s.deliver %q: no bus to forward answers on", key, d)
			}
			rt.target, rt.platform, rt.chatID = "platform", pl, chat
		}
		p.routes[r.Name] = rt
	}
	p.mux = http.NewServeMux()
	p.mux.HandleFunc("POST /webhooks/{route}", p.serveDelivery)
	return p, nil
}

// Name is "webhook".
func (p *Platform) Name() string { return Name }

// Connected reports whether the listener is up.
func (p *Platform) Connected() bool { return p.connected.Load() }

// Ready is closed once the listener is up the first time.
func (p *Platform) Ready() <-chan struct{} { return p.ready }

// Addr is the listener's address once Ready ("" before).
func (p *Platform) Addr() string {
	s, _ := p.addr.Load().(string)
	return s
}

// Targets lists the platforms the routes deliver answers to, so the
// gateway can check that each runs.
func (p *Platform) Targets() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range p.routes {
		if r.target == "platform" && !seen[r.platform] {
			seen[r.platform] = true
			out = append(out, r.platform)
		}
	}
	return out
}

// ServeHTTP serves the webhook routes (Run does it on its own listener).
func (p *Platform) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Run listens on Addr and serves the routes until ctx ends.
func (p *Platform) Run(ctx context.Context, in gw.Inbox) error {
	p.inbox.Store(&in)
	ln, err := net.Listen("tcp", p.cfg.Addr)
	if err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	p.addr.Store(ln.Addr().String())
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	p.connected.Store(true)
	p.readyOnce.Do(func() { close(p.ready) })
	p.log.Info().Str("addr", ln.Addr().String()).Int("routes", len(p.routes)).Msg("webhooks listening")
	defer p.connected.Store(false)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-served:
		return fmt.Errorf("webhook listener: %w", err)
	}
}

// accepted is the body of a 202.
type accepted struct {
	Status   string `json:"status"`
	Route    string `json:"route"`
	Delivery string `json:"delivery"`
}

func (p *Platform) serveDelivery(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rt, ok := p.routes[r.PathValue("route")]
	if !ok {
		writeError(w, http.StatusNotFound, "no such webhook route")
		return
	}
	if r.ContentLength > p.cfg.MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", p.cfg.MaxBody))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", p.cfg.MaxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	now := p.cfg.Now()
	sig, err := verify(rt.Secret, r.Header, body, now, p.cfg.Window)
	if err != nil {
		p.refused(ctx, rt, deliveryHeader(r.Header), r, err.Error())
		writeError(w, http.StatusUnauthorized, err.Error())
		return
	}
	id := deliveryHeader(r.Header)
	if id == "" {
		// Named by what the signature covers: a replay of this request has
		// the same name, the same body signed anew does not.
		sum := sha256.Sum256(append([]byte(sig.ts+"."), body...))
		id = "sha256-" + hex.EncodeToString(sum[:12])
	} else if len(id) > 128 || strings.ContainsFunc(id, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		writeError(w, http.StatusBadRequest, "delivery id: at most 128 printable ASCII characters")
		return
	}
	event := first(r.Header.Get(HeaderGitHubEvent), r.Header.Get("X-Hermes-Event"))
	if event == "ping" {
		// GitHub's check of a new hook: the signature was right, no turn.
		writeJSON(w, http.StatusOK, map[string]any{"status": "pong", "route": rt.Name})
		return
	}
	seenKey := rt.Name + "\x00" + id
	if !p.seen.add(seenKey, now) {
		p.refused(ctx, rt, id, r, ErrReplayed.Error())
		writeError(w, http.StatusConflict, ErrReplayed.Error())
		return
	}
	payload, err := decodePayload(r.Header.Get("Content-Type"), body)
	if err != nil {
		p.seen.forget(seenKey) // a corrected resend of the same delivery is welcome
		status := http.StatusBadRequest
		if errors.Is(err, errUnsupportedType) {
			status = http.StatusUnsupportedMediaType
		}
		writeError(w, status, "payload: "+err.Error())
		return
	}
	text, err := render(rt.prompt, payload, meta{route: rt.Name, delivery: id, event: event})
	if err == nil && text == "" {
		err = errors.New("it rendered no text")
	}
	if err != nil {
		p.seen.forget(seenKey)
		writeError(w, http.StatusUnprocessableEntity, "the route's prompt: "+err.Error())
		return
	}
	atts, err := p.images(rt, payload)
	if err != nil {
		p.seen.forget(seenKey)
		writeError(w, http.StatusUnprocessableEntity, "the route's images: "+err.Error())
		return
	}
	in := schema.Inbound{Platform: Name, Chat: rt.Name, ChatType: "dm", User: rt.Name, UserName: "webhook " + rt.Name,
		MessageID: id, Text: text, Verified: true, Attachments: atts}
	if rt.Session == SessionPerDelivery {
		in.Thread = id
	}
	if err := p.publish(ctx, in); err != nil {
		p.seen.forget(seenKey)
		p.log.Error().Err(err).Str("route", rt.Name).Str("delivery", id).Msg("hand a delivery to the gateway")
		writeError(w, http.StatusServiceUnavailable, "the gateway could not take the delivery; retry later")
		return
	}
	p.log.Info().Str("route", rt.Name).Str("delivery", id).Str("signature", sig.form).Msg("delivery accepted")
	writeJSON(w, http.StatusAccepted, accepted{Status: "accepted", Route: rt.Name, Delivery: id})
}

func deliveryHeader(h http.Header) string {
	return strings.TrimSpace(first(h.Get(HeaderDelivery), h.Get(HeaderGitHubDelivery)))
}

// refused publishes a refusal for the router to record, within the rate
// that keeps a flood of bad requests from filling the store.
func (p *Platform) refused(ctx context.Context, rt *route, id string, r *http.Request, reason string) {
	remote, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		remote = r.RemoteAddr
	}
	if len(id) > 128 {
		id = id[:128]
	}
	log := p.log.Warn().Str("route", rt.Name).Str("remote", remote).Str("delivery", id).Str("reason", reason)
	if !p.refuse.take(p.cfg.Now()) {
		log.Bool("recorded", false).Msg("request refused (over the refusals recorded per minute)")
		return
	}
	log.Msg("request refused")
	in := schema.Inbound{Kind: schema.InboundRefused, Platform: Name, Chat: rt.Name, User: remote, MessageID: id, Error: reason}
	if err := p.publish(ctx, in); err != nil {
		p.log.Error().Err(err).Msg("record a refusal")
	}
}

// publish hands in to the gateway through the inbox Run was given.
func (p *Platform) publish(ctx context.Context, in schema.Inbound) error {
	inbox := p.inbox.Load()
	if inbox == nil {
		return errors.New("the webhook platform is not running")
	}
	return (*inbox)(ctx, in)
}

// callback is the JSON body POSTed to a route's callback URL.
type callback struct {
	Route     string `json:"route"`
	Delivery  string `json:"delivery"`
	Session   string `json:"session,omitempty"`
	ReplyID   string `json:"reply_id,omitempty"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	Error     string `json:"error,omitempty"`
	Timestamp int64  `json:"timestamp"`
}

// Send delivers an answer where its route says.
func (p *Platform) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	if out.Kind == schema.OutboundTyping || out.Kind == schema.OutboundDelta {
		return nil, nil
	}
	rt, ok := p.routes[out.Chat]
	if !ok {
		return nil, &gw.PermanentError{Err: fmt.Errorf("webhook route %q is no longer configured", out.Chat)}
	}
	switch rt.target {
	case "url":
		return p.post(ctx, rt, out)
	case "platform":
		// Published on the other platform's topic without a ReplyID: that
		// adapter delivers it (with its own retries) and acknowledges
		// nothing; this chat records the answer as delivered once it is on
		// the bus.
		fwd := schema.Outbound{Kind: schema.OutboundReply, Platform: rt.platform, Chat: rt.chatID, SessionID: out.SessionID, Text: out.Text, Error: out.Error}
		if err := p.cfg.Forward(ctx, fwd); err != nil {
			return nil, fmt.Errorf("forward to %s:%s: %w", rt.platform, rt.chatID, err)
		}
		return nil, nil
	}
	return nil, nil // kept in the session only
}

func (p *Platform) post(ctx context.Context, rt *route, out schema.Outbound) ([]string, error) {
	now := p.cfg.Now()
	body, err := json.Marshal(callback{Route: rt.Name, Delivery: out.InReplyTo, Session: out.SessionID, ReplyID: out.ReplyID,
		Kind: out.Kind, Text: out.Text, Error: out.Error, Timestamp: now.Unix()})
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.Deliver, bytes.NewReader(body))
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hermes-webhook")
	req.Header.Set(HeaderSignature, Sign(rt.Secret, now, body))
	// The same id on every attempt: the receiver can drop a retry it
	// already took.
	req.Header.Set(HeaderDelivery, first(out.ReplyID, out.InReplyTo))
	req.Header.Set("X-Hermes-Route", rt.Name)
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("callback %s: %w", redact(rt.Deliver), err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return nil, nil
	}
	err = fmt.Errorf("callback %s: %s: %s", redact(rt.Deliver), resp.Status, strings.TrimSpace(string(snippet)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return nil, &gw.RetryAfterError{After: time.Duration(s) * time.Second, Err: err}
		}
		return nil, err
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return nil, err
	}
	return nil, &gw.PermanentError{Err: err}
}

// redact drops a URL's user info and query, which may hold credentials.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(callback URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// bucket is a token bucket: n tokens per period, at most n saved.
type bucket struct {
	mu     sync.Mutex
	n      float64
	per    time.Duration
	tokens float64
	last   time.Time
}

func newBucket(n int, per time.Duration) *bucket {
	return &bucket{n: float64(n), per: per, tokens: float64(n)}
}

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		b.tokens = min(b.n, b.tokens+now.Sub(b.last).Seconds()*b.n/b.per.Seconds())
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// maxImage bounds one picture of a delivery (the blob store's bound).
const maxImage = 20 << 20

// images reads the pictures at route rt's Images paths in payload and keeps
// them in CacheDir as photo attachments.
func (p *Platform) images(rt *route, payload any) ([]schema.Attachment, error) {
	var out []schema.Attachment
	for _, path := range rt.Images {
		v := payload
		for _, k := range strings.Split(path, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = obj[k]
		}
		var urls []any
		switch x := v.(type) {
		case nil:
			continue // absent: this delivery has none
		case []any:
			urls = x
		default:
			urls = []any{x}
		}
		for i, u := range urls {
			s, _ := u.(string)
			data, mime, err := decodeDataURL(s)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", path, i, err)
			}
			if p.cfg.CacheDir == "" {
				return nil, errors.New("this gateway keeps no files (no cache directory)")
			}
			if err := os.MkdirAll(p.cfg.CacheDir, 0o700); err != nil {
				return nil, err
			}
			sum := sha256.Sum256(data)
			name := hex.EncodeToString(sum[:])
			file := filepath.Join(p.cfg.CacheDir, name)
			if err := os.WriteFile(file, data, 0o600); err != nil {
				return nil, err
			}
			out = append(out, schema.Attachment{Kind: schema.AttachmentPhoto, Path: file, Name: fmt.Sprintf("%s-%d", strings.ReplaceAll(path, ".", "-"), i+1),
				MimeType: mime, Size: int64(len(data))})
		}
	}
	return out, nil
}

// decodeDataURL reads a base64 data: URL of a picture.
func decodeDataURL(s string) ([]byte, string, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	meta, payload, ok2 := strings.Cut(rest, ",")
	if !ok || !ok2 || !strings.HasSuffix(meta, ";base64") {
		return nil, "", errors.New("not a base64 data: URL (data:image/png;base64,…)")
	}
	if base64.StdEncoding.DecodedLen(len(payload))-2 > maxImage {
		return nil, "", fmt.Errorf("a picture over %d MiB", maxImage>>20)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", fmt.Errorf("not valid base64: %v", err)
	}
	mime := http.DetectContentType(data)
	if !strings.HasPrefix(mime, "image/") {
		return nil, "", fmt.Errorf("not a picture (%s)", mime)
	}
	return data, mime, nil
}
