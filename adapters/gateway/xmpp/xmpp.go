// Package xmpp is the gateway's XMPP (Jabber) adapter: it logs in as a
// client account, answers one-to-one chats and the multi-user chat rooms
// (XEP-0045) it is told to join, and sends the router's replies back as
// plain-text message bodies. It knows XMPP and nothing of sessions or
// models.
//
// Who is who: in a one-to-one chat the user is the sender's bare JID
// (alice@example.org). In a room the user is the occupant's real bare JID
// when the room shows it (non-anonymous rooms, or rooms where the bot is a
// moderator), else "room@conference.example.org/nick" — a nick anyone can
// take once its holder leaves, so allow-lists should name bare JIDs and
// rooms that expose them.
//
// A room replays recent history when the bot joins; those messages carry a
// XEP-0203 delay and arrive before the room's subject, and none of them
// starts a turn. The bot answers in a room only when a message names its
// nick (or is a /command), unless the gateway is configured to answer every
// group message.
//
// Delivery: a message is handed to the gateway once; a connection that
// drops is dialled again with backoff (rooms are joined again). A reply
// written to the server's socket counts as delivered: without stream
// management (XEP-0198) a reply written just before the server dies can be
// lost.
package xmpp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	goxmpp "github.com/xmppo/go-xmpp"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "xmpp"

// MaxMessage is where long answers are cut, in characters. XMPP sets no
// limit on a body, but servers cap stanzas (Prosody at 256 KiB by default,
// others lower) and clients show a wall of text badly; 4,000 characters is
// a screenful that every server and client here takes whole.
const MaxMessage = 4000

// Config configures the adapter.
type Config struct {
	// JID is the bot's account (bot@example.org); a resource, if given,
	// is asked for (else "hermes").
	JID string
	// Password is the account's password.
	Password string
	// Server is host:port to connect to; empty looks up the domain's SRV
	// record (then domain:5222).
	Server string
	// Rooms are the rooms to join (room@conference.example.org).
	Rooms []string
	// Nick is the bot's nickname in rooms (default: the JID's local part).
	Nick string
	// TLS configures STARTTLS (nil: the system's roots and the JID's
	// domain as the server name). The connection is always encrypted.
	TLS *tls.Config
	// MaxMessage overrides MaxMessage (tests).
	MaxMessage int
	// DialTimeout bounds one connection attempt (20 s by default).
	DialTimeout time.Duration
	// MaxBackoff caps the wait between connection attempts (30 s by
	// default; the first wait is 250 ms).
	MaxBackoff time.Duration
	Log        zerolog.Logger
}

// Adapter is the XMPP platform. Create it with New.
type Adapter struct {
	cfg   Config
	bare  string // the bot's bare JID
	nick  string
	rooms map[string]bool
	log   zerolog.Logger

	connected atomic.Bool
	// conns counts the connections made (tests watch reconnects).
	conns atomic.Int64

	mu     sync.Mutex
	client *goxmpp.Client
	// sent holds the ids of the parts of a reply written before one of
	// its parts failed, so that a retry sends only the rest.
	sent map[string][]string
	// occupants maps room → nick → real bare JID ("" when hidden).
	occupants map[string]map[string]string
	// live marks the rooms whose history replay is over (their
	// subject arrived) on the current connection.
	live map[string]bool
	// nicks holds the bot's nick in each room on the current connection
	// (Nick, or Nick_ when someone else holds Nick).
	nicks map[string]string
	// refused holds the rooms that refused the bot on the current
	// connection.
	refused map[string]bool
	// lastErr is why the last connection ended or failed.
	lastErr   string
	lastErrAt time.Time
}

// New checks cfg and returns the adapter; it makes no connection.
func New(cfg Config) (*Adapter, error) {
	jid := strings.TrimSpace(cfg.JID)
	local, domain, resource := splitJID(jid)
	if local == "" || domain == "" {
		return nil, fmt.Errorf("platforms.xmpp.jid %q: use the bot's account, such as hermes@example.org (XMPP_JID)", cfg.JID)
	}
	if cfg.Password == "" {
		return nil, errors.New("platforms.xmpp.password is empty: set XMPP_PASSWORD to the bot account's password")
	}
	if cfg.Server != "" && !strings.Contains(cfg.Server, ":") {
		cfg.Server += ":5222"
	}
	if cfg.Nick == "" {
		cfg.Nick = local
	}
	if resource == "" {
		resource = "hermes"
	}
	cfg.JID = local + "@" + domain + "/" + resource
	rooms := map[string]bool{}
	for i, r := range cfg.Rooms {
		r = strings.ToLower(strings.TrimSpace(r))
		l, d, res := splitJID(r)
		if l == "" || d == "" || res != "" {
			return nil, fmt.Errorf("platforms.xmpp.rooms[%d] %q: use a room's bare JID, such as hermes@conference.example.org", i, cfg.Rooms[i])
		}
		rooms[r] = true
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = MaxMessage
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 20 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	return &Adapter{cfg: cfg, bare: strings.ToLower(local + "@" + domain), nick: cfg.Nick, rooms: rooms,
		log:  cfg.Log.With().Str("platform", Platform).Logger(),
		sent: map[string][]string{}, occupants: map[string]map[string]string{}, live: map[string]bool{},
		nicks: map[string]string{}}, nil
}

// Name is "xmpp".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the adapter is logged in right now and in its
// rooms: each room has sent its history and subject (from then on its
// messages are live) or refused the join. Until then a room's message
// would arrive as history, which the bot does not answer.
func (a *Adapter) Connected() bool {
	if !a.connected.Load() {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for room := range a.rooms {
		if !a.live[room] && !a.refused[room] {
			return false
		}
	}
	return true
}

// LastError is why the last connection ended or failed, and when
// (gw.ErrorReporter): the gateway's status shows it while Run retries.
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

// Connections counts the connections made since New (each reconnect adds
// one).
func (a *Adapter) Connections() int64 { return a.conns.Load() }

// Run logs in (a refused password is a *gw.PermanentError), joins the
// rooms and hands each message to in until ctx ends. A dropped connection
// is dialled again with backoff; after three failed attempts in a row Run
// returns the error, so the gateway's status shows it, and the gateway
// calls Run again.
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	return gw.Redial(ctx, a.log, "xmpp", 250*time.Millisecond, a.cfg.MaxBackoff, a.dial,
		func(ctx context.Context, c *goxmpp.Client) error { return a.serve(ctx, c, in) }, a.noteError)
}

// dial connects and logs in; ctx ending closes a connection being made.
func (a *Adapter) dial(ctx context.Context) (*goxmpp.Client, error) {
	_, domain, _ := splitJID(a.cfg.JID)
	tc := a.cfg.TLS
	if tc == nil {
		tc = &tls.Config{ServerName: domain, MinVersion: tls.VersionTLS12}
	} else if tc.ServerName == "" {
		tc = tc.Clone()
		tc.ServerName = domain
	}
	_, _, resource := splitJID(a.cfg.JID)
	opts := goxmpp.Options{Host: a.cfg.Server, User: a.bare, Password: a.cfg.Password, Resource: resource,
		NoTLS: true, StartTLS: true, TLSConfig: tc, DialTimeout: a.cfg.DialTimeout}
	type result struct {
		c   *goxmpp.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := opts.NewClient()
		done <- result{c, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				_ = r.c.Close() // nothing reads it yet
			}
		}()
		return nil, ctx.Err()
	}
	if r.err != nil {
		msg := r.err.Error()
		if strings.Contains(msg, "auth failure") || strings.Contains(msg, "not-authorized") {
			return nil, &gw.PermanentError{Err: fmt.Errorf("the XMPP server refused %s's password (%v): check XMPP_JID and XMPP_PASSWORD", a.bare, r.err)}
		}
		return nil, fmt.Errorf("xmpp connect: %w", r.err)
	}
	return r.c, nil
}

// serve joins the rooms and hands on what the connection receives until
// it ends or ctx does.
func (a *Adapter) serve(ctx context.Context, c *goxmpp.Client, in gw.Inbox) error {
	a.mu.Lock()
	a.client = c
	a.occupants = map[string]map[string]string{}
	a.live = map[string]bool{}
	a.nicks = map[string]string{}
	a.refused = map[string]bool{}
	a.mu.Unlock()
	a.conns.Add(1)
	// One goroutine reads; this one handles what it read, so a message
	// the gateway has not taken yet holds back the rest.
	stanzas := make(chan any)
	quit := make(chan struct{})
	readDone := make(chan error, 1)
	go func() {
		for {
			st, err := c.Recv()
			if err != nil {
				readDone <- err
				return
			}
			select {
			case stanzas <- st:
			case <-quit:
				readDone <- nil
				return
			}
		}
	}()
	defer func() {
		a.connected.Store(false)
		a.mu.Lock()
		if a.client == c {
			a.client = nil
		}
		a.mu.Unlock()
		close(quit)
		// go-xmpp's Close reads what is left of the stream itself (up to
		// 10 s), so it runs only once Recv has returned.
		go func() {
			<-readDone
			_ = c.Close()
		}()
	}()
	for room := range a.rooms {
		if err := a.join(c, room, a.nick); err != nil {
			return err
		}
	}
	a.connected.Store(true)
	a.log.Info().Str("jid", a.bare).Int("rooms", len(a.rooms)).Msg("connected")
	for {
		var st any
		select {
		case st = <-stanzas:
		case err := <-readDone:
			readDone <- err // for the deferred Close
			return err
		case <-ctx.Done():
			// End the stream; the server ends its side and Recv returns.
			// A server gone silent is left to TCP keepalives.
			_, _ = c.SendOrg("</stream:stream>")
			return ctx.Err()
		}
		switch v := st.(type) {
		case goxmpp.Chat:
			msg, ok := a.inbound(v)
			if !ok {
				continue
			}
			// XMPP does not deliver a message twice: keep offering it
			// to the gateway until it is recorded, or the run ends.
			gw.Offer(ctx, a.log, in, msg)
			if ctx.Err() != nil {
				_, _ = c.SendOrg("</stream:stream>")
				return ctx.Err()
			}
		case goxmpp.Presence:
			a.presence(c, v)
		}
	}
}

// join enters a room as nick, accepting the history the room sends by
// default (recognised and ignored as it arrives).
func (a *Adapter) join(c *goxmpp.Client, room, nick string) error {
	a.mu.Lock()
	a.nicks[room] = nick
	a.mu.Unlock()
	_, err := c.SendOrg("<presence to='" + escape(room+"/"+nick) + "'><x xmlns='http://jabber.org/protocol/muc'/></presence>")
	return err
}

// roomNick is the bot's nick in room now.
func (a *Adapter) roomNick(room string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.nicks[room]; n != "" {
		return n
	}
	return a.nick
}

// presence keeps the rooms' occupants, joins a room again as Nick_ when
// someone else holds Nick there, and accepts subscription requests (so
// that people's clients show the bot online).
func (a *Adapter) presence(c *goxmpp.Client, p goxmpp.Presence) {
	from := p.From
	room, nick, _ := strings.Cut(from, "/")
	room = strings.ToLower(room)
	if a.rooms[room] && nick != "" {
		mine := a.roomNick(room)
		switch {
		case p.Type == "error" && nick == mine && p.Error == "conflict" && mine == a.nick:
			a.log.Warn().Str("room", room).Str("nick", a.nick).Msg("the nick is taken in the room: joining as " + a.nick + "_")
			_ = a.join(c, room, a.nick+"_")
		case p.Type == "error" && nick == mine:
			a.log.Error().Str("room", room).Str("error", p.Error).Msg("could not join the room")
			a.mu.Lock()
			a.refused[room] = true
			a.mu.Unlock()
		case p.Type == "unavailable":
			a.mu.Lock()
			delete(a.occupants[room], nick)
			a.mu.Unlock()
		default:
			a.mu.Lock()
			if a.occupants[room] == nil {
				a.occupants[room] = map[string]string{}
			}
			real, _, _ := strings.Cut(p.JID, "/")
			a.occupants[room][nick] = strings.ToLower(real)
			a.mu.Unlock()
		}
		return
	}
	if p.Type == "subscribe" {
		c.ApproveSubscription(bareJID(from))
	}
}

// escape makes s safe inside an XML attribute or text.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\'':
			b.WriteString("&apos;")
		case '"':
			b.WriteString("&quot;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			if isXMLChar(r) {
				b.WriteRune(r)
			} else {
				b.WriteRune('\uFFFD')
			}
		}
	}
	return b.String()
}

// isXMLChar says whether r may appear in an XML 1.0 document.
func isXMLChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// splitJID cuts local@domain/resource into its parts.
func splitJID(jid string) (local, domain, resource string) {
	rest, resource, _ := strings.Cut(jid, "/")
	local, domain, ok := strings.Cut(rest, "@")
	if !ok {
		return "", rest, resource
	}
	return local, domain, resource
}

// bareJID drops a JID's resource and lower-cases the rest (local parts
// and domains compare without case in practice; resources do not).
func bareJID(jid string) string {
	b, _, _ := strings.Cut(jid, "/")
	return strings.ToLower(b)
}

var _ gw.Platform = (*Adapter)(nil)
var _ gw.Connector = (*Adapter)(nil)
var _ gw.ErrorReporter = (*Adapter)(nil)
