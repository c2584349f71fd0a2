// Package homeassistant is the gateway's Home Assistant adapter: it
// connects to a Home Assistant server's WebSocket API with a long-lived
// access token, subscribes to its state_changed events, and hands the
// changes of the entities it watches to the agent as messages of one chat
// (ha_events); the agent's answers become persistent notifications in
// Home Assistant, created through its REST API.
//
// Filtering is closed by default, as the Python agent's: an event is taken
// when its entity is in WatchEntities or its domain in WatchDomains, or
// when WatchAll is set and neither list is given; IgnoreEntities always
// wins. A change of the same entity within Cooldown of the last one taken
// is dropped, and so is an event whose state did not change (an attribute
// update).
//
// The messages come from Home Assistant itself, not from a person: they
// are marked verified (the token authenticated the connection), so no
// allow-list or pairing applies, and their text is never a chat command.
// Each message's id is the entity's and its new state's write time, so a
// change seen twice starts one turn.
//
// A dropped connection (Home Assistant restarting) is dialled again with
// backoff; events that happen while it is down are not replayed (Home
// Assistant keeps no backlog for a subscription). A refused token is a
// *gw.PermanentError. The token is sent only in the WebSocket's auth
// message and the REST calls' Authorization header; it is never logged.
package homeassistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "homeassistant"

// Chat is the one chat the adapter's messages belong to, and UserID and
// UserName the sender they carry (the Python agent's names).
const (
	Chat     = "ha_events"
	UserID   = "homeassistant"
	UserName = "Home Assistant"
)

// DefaultURL is the server the Python agent assumes when HASS_URL is
// unset.
const DefaultURL = "http://homeassistant.local:8123"

// DefaultCooldown is the least time between two messages about one
// entity when the configuration does not say (cooldown_seconds: 30).
const DefaultCooldown = 30 * time.Second

// MaxMessage is where an answer is cut, in characters (the Python agent's
// limit for a notification).
const MaxMessage = 4096

// MaxEvent bounds one WebSocket message from the server (an event with
// large attributes); a bigger one drops the connection.
const MaxEvent = 16 << 20

// NotificationTitle is the title of the notifications the answers become.
const NotificationTitle = "Hermes Agent"

// Config configures the adapter.
type Config struct {
	// URL is the server's base URL (http:// or https://; default
	// DefaultURL).
	URL string
	// Token is a long-lived access token of a Home Assistant user.
	Token string
	// WatchDomains and WatchEntities select the entities whose changes
	// are taken (light, binary_sensor…; light.kitchen…).
	WatchDomains  []string
	WatchEntities []string
	// IgnoreEntities are never taken.
	IgnoreEntities []string
	// WatchAll takes every entity when neither watch list is given.
	WatchAll bool
	// Cooldown is the least time between two messages about one entity
	// (0: none).
	Cooldown time.Duration
	// HTTP makes the REST calls (default: a client with a 30 s timeout).
	HTTP *http.Client
	// DialTimeout bounds one connection and its authentication (20 s by
	// default).
	DialTimeout time.Duration
	// MaxBackoff caps the wait between connection attempts (60 s by
	// default; the first wait is 500 ms).
	MaxBackoff time.Duration
	// Ping is the interval of the WebSocket pings that find a silent
	// server (30 s by default); a connection without an answer for two
	// intervals is dropped.
	Ping time.Duration
	Log  zerolog.Logger
}

// Adapter is the Home Assistant platform. Create it with New.
type Adapter struct {
	cfg     Config
	base    *url.URL
	wsURL   string
	domains map[string]bool
	watch   map[string]bool
	ignore  map[string]bool
	log     zerolog.Logger

	connected atomic.Bool
	conns     atomic.Int64

	mu        sync.Mutex
	last      map[string]time.Time // entity → when its last change was taken
	lastErr   string
	lastErrAt time.Time
}

// New checks cfg and returns the adapter; it makes no connection.
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("platforms.homeassistant.token is empty: set HASS_TOKEN to a long-lived access token (Home Assistant: your profile, Security)")
	}
	cfg.Token = strings.TrimSpace(cfg.Token)
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("platforms.homeassistant url %q: use the server's http:// or https:// address (HASS_URL)", cfg.URL)
	}
	ws := *base
	ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[base.Scheme]
	ws.Path += "/api/websocket"
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 20 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.Ping <= 0 {
		cfg.Ping = 30 * time.Second
	}
	set := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			if x = strings.TrimSpace(x); x != "" {
				m[x] = true
			}
		}
		return m
	}
	a := &Adapter{cfg: cfg, base: base, wsURL: ws.String(), domains: set(cfg.WatchDomains), watch: set(cfg.WatchEntities),
		ignore: set(cfg.IgnoreEntities), log: cfg.Log.With().Str("platform", Platform).Logger(), last: map[string]time.Time{}}
	if len(a.domains) == 0 && len(a.watch) == 0 && !cfg.WatchAll {
		a.log.Warn().Msg("no watch_domains, watch_entities or watch_all configured: every state change is dropped")
	}
	return a, nil
}

// Name is "homeassistant".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the adapter is subscribed to the server's events
// right now.
func (a *Adapter) Connected() bool { return a.connected.Load() }

// Connections counts the subscriptions made since New (each reconnect
// adds one).
func (a *Adapter) Connections() int64 { return a.conns.Load() }

// LastError is why the last connection ended or failed, and when
// (gw.ErrorReporter).
func (a *Adapter) LastError() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr, a.lastErrAt
}

func (a *Adapter) noteError(err error) {
	a.mu.Lock()
	a.lastErr, a.lastErrAt = err.Error(), time.Now()
	a.mu.Unlock()
}

// Run connects, authenticates (a refused token is a *gw.PermanentError),
// subscribes to state_changed and hands each watched change to in until
// ctx ends. A dropped connection is dialled again with backoff; after
// three failed attempts in a row Run returns the error (the gateway shows
// it and calls Run again).
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	return gw.Redial(ctx, a.log, "home assistant", 500*time.Millisecond, a.cfg.MaxBackoff, a.dial,
		func(ctx context.Context, c *websocket.Conn) error { return a.serve(ctx, c, in) }, a.noteError)
}

// wsMsg is a message of Home Assistant's WebSocket API, both ways.
type wsMsg struct {
	ID          int             `json:"id,omitempty"`
	Type        string          `json:"type"`
	AccessToken string          `json:"access_token,omitempty"`
	EventType   string          `json:"event_type,omitempty"`
	Success     *bool           `json:"success,omitempty"`
	Message     string          `json:"message,omitempty"`
	HAVersion   string          `json:"ha_version,omitempty"`
	Error       *wsError        `json:"error,omitempty"`
	Event       json.RawMessage `json:"event,omitempty"`
}

type wsError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// dial opens the WebSocket, authenticates and subscribes.
func (a *Adapter) dial(ctx context.Context) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, a.cfg.DialTimeout)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: a.cfg.DialTimeout, Proxy: http.ProxyFromEnvironment}
	c, resp, err := d.DialContext(dctx, a.wsURL, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("home assistant websocket %s: %s", a.wsURL, resp.Status)
		}
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	stop := context.AfterFunc(dctx, func() { _ = c.Close() }) // a silent server ends the handshake
	ok := false
	defer func() {
		stop()
		if !ok {
			_ = c.Close()
		}
	}()
	var m wsMsg
	if err := c.ReadJSON(&m); err != nil {
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	if m.Type != "auth_required" {
		return nil, fmt.Errorf("home assistant websocket: expected auth_required, got %q", m.Type)
	}
	if err := c.WriteJSON(wsMsg{Type: "auth", AccessToken: a.cfg.Token}); err != nil {
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	m = wsMsg{}
	if err := c.ReadJSON(&m); err != nil {
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	switch m.Type {
	case "auth_ok":
	case "auth_invalid":
		return nil, &gw.PermanentError{Err: fmt.Errorf("home assistant refused the access token (%s): check HASS_TOKEN", m.Message)}
	default:
		return nil, fmt.Errorf("home assistant websocket: expected auth_ok, got %q", m.Type)
	}
	if err := c.WriteJSON(wsMsg{ID: 1, Type: "subscribe_events", EventType: "state_changed"}); err != nil {
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	m = wsMsg{}
	if err := c.ReadJSON(&m); err != nil {
		return nil, fmt.Errorf("home assistant websocket: %w", err)
	}
	if m.Type != "result" || m.ID != 1 || m.Success == nil || !*m.Success {
		why := m.Type
		if m.Error != nil {
			why = m.Error.Code + ": " + m.Error.Message
		}
		return nil, fmt.Errorf("home assistant refused the subscription to state_changed (%s)", why)
	}
	a.log.Info().Str("url", a.base.String()).Str("ha_version", m.HAVersion).Msg("connected")
	ok = true
	return c, nil
}

// serve hands on the connection's events until it ends or ctx does.
func (a *Adapter) serve(ctx context.Context, c *websocket.Conn, in gw.Inbox) error {
	a.conns.Add(1)
	a.connected.Store(true)
	defer a.connected.Store(false)
	done := make(chan struct{})
	defer close(done)
	stop := context.AfterFunc(ctx, func() {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = c.Close()
	})
	defer stop()
	defer c.Close()
	c.SetReadLimit(MaxEvent)
	alive := func() error { return c.SetReadDeadline(time.Now().Add(2*a.cfg.Ping + 5*time.Second)) }
	_ = alive()
	c.SetPongHandler(func(string) error { return alive() })
	go func() {
		t := time.NewTicker(a.cfg.Ping)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := c.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
					return
				}
			}
		}
	}()
	for {
		var m wsMsg
		if err := c.ReadJSON(&m); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		_ = alive()
		if m.Type != "event" {
			continue
		}
		msg, ok := a.inbound(m.Event, time.Now())
		if !ok {
			continue
		}
		// Home Assistant does not send an event twice: keep offering it
		// to the gateway until it is recorded, or the run ends.
		gw.Offer(ctx, a.log, in, msg)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

var _ gw.Platform = (*Adapter)(nil)
var _ gw.Connector = (*Adapter)(nil)
var _ gw.ErrorReporter = (*Adapter)(nil)
