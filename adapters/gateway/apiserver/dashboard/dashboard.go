// Package dashboard is Hermes' web dashboard: server-rendered pages over
// the event log and its projections (sessions, a session's conversation
// and timeline, lineage, search, costs, gateway platforms), live updates
// by server-sent events fed from the store's subscription, and a few
// actions (fork, export, replay, start a chat or continue one). Everything it serves
// is embedded in the binary; it loads nothing from elsewhere.
//
// Every route needs the key: a browser logs in once with a form (and then
// holds an HttpOnly, SameSite=Strict cookie with a random session token,
// never the key; Secure when the browser came over TLS), other clients send
// it as a bearer header. POST routes reached with the cookie need the
// session's CSRF token as well. Keys shorter than MinKeyLen are refused,
// and a client address that gave five wrong keys in 15 minutes is refused
// (429) until the window passes.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/session"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/dashboard"

// Reader is the projections' side the pages show, brought up to the end of
// the log before each answer.
type Reader interface {
	// List returns sessions, most recently active first (limit <= 0: all).
	List(ctx context.Context, limit int) ([]sessions.Summary, error)
	// Get returns a session by id or unique prefix.
	Get(ctx context.Context, id string) (sessions.Summary, bool, error)
	// Lineage is the tree holding the session, root first.
	Lineage(ctx context.Context, id string) ([]lineage.Node, error)
	// Costs are the totals grouped by session, lineage, model, provider,
	// source or day, from day since (YYYY-MM-DD, "" for all).
	Costs(ctx context.Context, by, since string) ([]costs.Row, error)
	// Search runs a full-text search.
	Search(ctx context.Context, q search.Query) (search.Results, error)
}

// Chatter sends a user turn to a session and waits for its answer (the API
// server's chat route does it); the answer's events reach the pages live.
type Chatter interface {
	// Continue sends text to an existing session.
	Continue(ctx context.Context, session, text string) error
	// Start sends text as the first turn of a new session, calls started
	// with the session's id as soon as the turn begins, and waits for the
	// answer.
	Start(ctx context.Context, text string, started func(session string)) error
}

// Caps are the spending caps the costs page measures against (USD; 0 is
// no cap).
type Caps struct {
	PerSession float64
	PerDay     float64
}

// Options configure a Handler.
type Options struct {
	// Key is required: the same key as the API server's bearer key.
	Key string
	// Store is the event log: sessions' events, forks, exports, replays
	// and the live updates.
	Store events.Store
	// Blobs holds the images sessions name; an export carries them (nil:
	// exports without them).
	Blobs session.Blobs
	// Read is the projections' side.
	Read Reader
	// Chat starts and continues sessions; nil hides the chat forms.
	Chat Chatter
	// Caps are shown on the costs page.
	Caps Caps
	// Platforms reports the gateway's platforms; nil hides the gateway
	// page.
	Platforms func() []gw.Status
	// Cron reads the scheduled jobs; nil hides the cron page.
	Cron *cron.Jobs
	// SessionTTL is how long a login lasts (default 12 h).
	SessionTTL time.Duration
	Log        zerolog.Logger
}

// Handler serves the dashboard under Prefix.
type Handler struct {
	opts    Options
	log     zerolog.Logger
	keyHash [32]byte
	mux     *http.ServeMux
	pages   *pages

	mu     sync.Mutex
	logins map[string]login // session token -> login
	once   map[string]time.Time
	// fails are the recent wrong keys per client address (throttle).
	fails map[string][]time.Time

	// turns counts background chat turns, so Close can wait for them.
	turns sync.WaitGroup
	// run is the lifetime of live streams and chat turns; Close ends it
	// and starts the next (the server may be run again).
	runMu sync.Mutex
	ctx   context.Context
	stop  context.CancelFunc
}

// life is the context live streams and chat turns run in.
func (h *Handler) life() context.Context {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	return h.ctx
}

type login struct {
	csrf    string
	expires time.Time
}

// ErrNoKey is returned by New without a key: the dashboard shows every
// conversation and can run turns, so it never runs open.
var ErrNoKey = errors.New("the dashboard needs a key: set API_SERVER_KEY (or platforms.api_server.key)")

// MinKeyLen is the shortest key the dashboard takes: it guards every
// conversation and can run turns, so a guessable key is refused.
const MinKeyLen = 16

// ErrWeakKey is returned by New for a key shorter than MinKeyLen.
var ErrWeakKey = fmt.Errorf("the dashboard's key (API_SERVER_KEY) is too short: it needs at least %d characters (e.g. `openssl rand -hex 24`)", MinKeyLen)

// Login throttle: a client address that gave a wrong key maxFails times
// within failWindow is refused (429) until the oldest of them is that old;
// all addresses together get maxFailsAll per failWindow.
const (
	maxFails    = 5
	maxFailsAll = 50
	failWindow  = 15 * time.Minute
)

// New checks opts and returns the dashboard's handler.
func New(opts Options) (*Handler, error) {
	if opts.Key == "" {
		return nil, ErrNoKey
	}
	if len(strings.TrimSpace(opts.Key)) < MinKeyLen {
		return nil, ErrWeakKey
	}
	if opts.Store == nil || opts.Read == nil {
		return nil, errors.New("dashboard: a store and a reader are required")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	h := &Handler{opts: opts, log: opts.Log.With().Str("component", "dashboard").Logger(), keyHash: sha256.Sum256([]byte(opts.Key)),
		pages: p, logins: map[string]login{}, once: map[string]time.Time{}, fails: map[string][]time.Time{}}
	h.ctx, h.stop = context.WithCancel(context.Background())
	h.routes()
	return h, nil
}

// Close ends the live streams and the chat turns the dashboard started,
// and waits for the turns. It may be called more than once.
func (h *Handler) Close() {
	h.runMu.Lock()
	h.stop()
	h.ctx, h.stop = context.WithCancel(context.Background())
	h.runMu.Unlock()
	h.turns.Wait()
}

// ServeHTTP serves a request under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// No script but ours, no inline script or style, no framing, and no
	// referrer (a one-time login link must not leak).
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
		hd.Set("Cache-Control", "no-store")
	}
	h.mux.ServeHTTP(w, r)
}

// LoginLink returns a path that logs a browser in once, within ten
// minutes, without typing the key (what `hermes dashboard` prints).
func (h *Handler) LoginLink() string {
	t := token()
	h.mu.Lock()
	h.once[t] = time.Now().Add(10 * time.Minute)
	h.mu.Unlock()
	return Prefix + "/login?once=" + t
}

func token() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const (
	cookieName  = "hermes_dashboard"
	loginCookie = "hermes_dashboard_login"
	csrfField   = "csrf"
	csrfHeader  = "X-CSRF-Token"
)

// keyOK compares a key with the configured one in constant time.
func (h *Handler) keyOK(key string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	return subtle.ConstantTimeCompare(sum[:], h.keyHash[:]) == 1
}

// clientOf is the address a request came from (its host, without port).
// A proxy's forwarding headers are not believed: behind a proxy every
// client shares the proxy's budget, which errs on the safe side.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// throttled says how long client must wait before its next key is looked
// at (0: it may try now).
func (h *Handler) throttled(client string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	total := 0
	for c, ts := range h.fails {
		live := ts[:0]
		for _, t := range ts {
			if now.Sub(t) < failWindow {
				live = append(live, t)
			}
		}
		if len(live) == 0 {
			delete(h.fails, c)
			continue
		}
		h.fails[c] = live
		total += len(live)
	}
	if ts := h.fails[client]; len(ts) >= maxFails {
		return failWindow - now.Sub(ts[len(ts)-maxFails])
	}
	if total >= maxFailsAll {
		return time.Minute
	}
	return 0
}

// failed records a wrong key from client.
func (h *Handler) failed(client string) {
	h.mu.Lock()
	h.fails[client] = append(h.fails[client], time.Now())
	h.mu.Unlock()
}

// tooMany answers a throttled client.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	http.Error(w, "too many wrong keys from here: try again later", http.StatusTooManyRequests)
}

// secure says whether the browser reached us over TLS (directly, or
// through a proxy that says so): then cookies are marked Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// who is how a request authenticated.
type who struct {
	bearer bool
	csrf   string // the cookie session's CSRF token
}

// authenticate checks the bearer header or the session cookie.
func (h *Handler) authenticate(r *http.Request) (who, bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, key, _ := strings.Cut(a, " ")
		return who{bearer: true}, strings.EqualFold(scheme, "Bearer") && h.keyOK(key)
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return who{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.logins[c.Value]
	if !ok || time.Now().After(l.expires) {
		delete(h.logins, c.Value)
		return who{}, false
	}
	return who{csrf: l.csrf}, true
}

type whoKey struct{}

// guard requires a login; POSTs by cookie need the CSRF token too.
func (h *Handler) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		bearer := r.Header.Get("Authorization") != ""
		if bearer {
			if wait := h.throttled(clientOf(r)); wait > 0 {
				tooMany(w, wait)
				return
			}
		}
		u, ok := h.authenticate(r)
		if !ok && bearer {
			h.failed(clientOf(r))
		}
		if !ok {
			if u.bearer || r.Header.Get("Accept") == "text/event-stream" || r.Method != http.MethodGet {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hermes"`)
				http.Error(w, "login required: open "+Prefix+"/login or send Authorization: Bearer <API_SERVER_KEY>", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost && !u.bearer {
			sent := r.Header.Get(csrfHeader)
			if sent == "" {
				sent = r.PostFormValue(csrfField)
			}
			if subtle.ConstantTimeCompare([]byte(sent), []byte(u.csrf)) != 1 {
				http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, u)))
	}
}

func csrfOf(r *http.Request) string {
	u, _ := r.Context().Value(whoKey{}).(who)
	return u.csrf
}

// loginPage shows the form (GET) or checks the key (POST). The form's own
// CSRF protection is a double-submit token: a cookie and a hidden field.
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if once := r.URL.Query().Get("once"); once != "" {
			h.mu.Lock()
			exp, ok := h.once[once]
			delete(h.once, once)
			h.mu.Unlock()
			if ok && time.Now().Before(exp) {
				h.startSession(w, r)
				http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
				return
			}
			h.renderLogin(w, r, http.StatusUnauthorized, "That login link was used already or has expired: enter the key.")
			return
		}
		h.renderLogin(w, r, http.StatusOK, "")
	case http.MethodPost:
		c, err := r.Cookie(loginCookie)
		field := r.PostFormValue(csrfField)
		if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(field)) != 1 {
			h.renderLogin(w, r, http.StatusForbidden, "The form expired: try again.")
			return
		}
		client := clientOf(r)
		if wait := h.throttled(client); wait > 0 {
			h.log.Warn().Str("remote", r.RemoteAddr).Msg("dashboard login refused: too many wrong keys")
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			h.renderLogin(w, r, http.StatusTooManyRequests, "Too many wrong keys from here: try again later.")
			return
		}
		if !h.keyOK(r.PostFormValue("key")) {
			h.failed(client)
			h.log.Warn().Str("remote", r.RemoteAddr).Msg("dashboard login with a wrong key")
			h.renderLogin(w, r, http.StatusUnauthorized, "Wrong key.")
			return
		}
		h.startSession(w, r)
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "use GET or POST", http.StatusMethodNotAllowed)
	}
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	t := token()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: t, Path: Prefix + "/login", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 3600, Secure: secure(r)})
	h.pages.render(w, nil, status, "login", map[string]any{"CSRF": t, "Error": msg, "Title": "Log in", "Prefix": Prefix})
}

func (h *Handler) startSession(w http.ResponseWriter, r *http.Request) {
	t := token()
	now := time.Now()
	h.mu.Lock()
	for k, l := range h.logins {
		if now.After(l.expires) {
			delete(h.logins, k)
		}
	}
	h.logins[t] = login{csrf: token(), expires: now.Add(h.opts.SessionTTL)}
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		MaxAge: int(h.opts.SessionTTL / time.Second), Secure: secure(r)})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		h.mu.Lock()
		delete(h.logins, c.Value)
		h.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1, Secure: secure(r)})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
