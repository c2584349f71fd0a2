// Package irc is the gateway's IRC adapter: one client connection to an
// IRC server (RFC 1459/2812, plain or TLS) that takes private messages and
// channel messages addressed to it ("nick: …") to the router, and sends
// the router's answers back as PRIVMSGs — split into lines that fit IRC's
// 512-byte limit as the server relays them, paced by a token bucket so the
// server's flood protection never drops the bot.
//
// IRC has no stable user ids: a nick is whoever holds it now. The adapter
// reports a message's user as the first allow-list entry it matches (a
// nick, or a nick!user@host mask with wildcards) or else as its
// nick!user@host; see UserID.
//
// Lines are parsed and built with github.com/ergochat/irc-go's ircmsg,
// maintained by the Ergo IRC server's authors; the connection, its
// registration, reconnection and pacing are this package's, because they
// are what the gateway's delivery guarantees rest on.
package irc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ergochat/irc-go/ircfmt"
	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Name is the platform's name.
const Name = "irc"

// Config configures the adapter.
type Config struct {
	// Server is the IRC server's host name; Port its port (6667, or 6697
	// with TLS, by default).
	Server string
	Port   int
	// TLS connects with TLS; TLSConfig, when set, replaces the default
	// (the system's roots, Server as the name).
	TLS       bool
	TLSConfig *tls.Config
	// Nick is the bot's nick; User its user name (Nick by default) and
	// RealName its real name ("Hermes" by default).
	Nick, User, RealName string
	// Password is the server password (PASS), if the server wants one.
	Password string
	// Channels are joined on every connection.
	Channels []string
	// AllowedUsers are the allow-list's entries (nicks or nick!user@host
	// masks): a message from a user matching one reaches the router with
	// that entry as its user id.
	AllowedUsers []string
	// LinesPerSecond and Burst are the flood control's token bucket
	// (1 line a second after a burst of 4 by default).
	LinesPerSecond float64
	Burst          int
	// ReconnectMin and ReconnectMax bound the backoff between connection
	// attempts (1 s and 2 min by default).
	ReconnectMin, ReconnectMax time.Duration
	Log                        zerolog.Logger
}

// Adapter is the IRC platform.
type Adapter struct {
	cfg     Config
	limiter *rate.Limiter
	log     zerolog.Logger

	mu      sync.Mutex
	conn    *conn
	lastErr string
	errAt   time.Time

	sendMu   sync.Mutex
	progress map[string]int // lines of a reply already written, by reply id
	seq      atomic.Int64
}

// New checks cfg and returns an adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.Server == "" {
		return nil, errors.New("irc: no server (set platforms.irc.server or IRC_SERVER)")
	}
	if cfg.Nick == "" || strings.ContainsAny(cfg.Nick, " !@:#,*?\r\n") {
		return nil, fmt.Errorf("irc: nick %q is not a valid IRC nick (set platforms.irc.nick or IRC_NICK)", cfg.Nick)
	}
	for _, ch := range cfg.Channels {
		if !isChannel(ch) || strings.ContainsAny(ch, " ,\x07\r\n") {
			return nil, fmt.Errorf("irc: %q is not a channel name (platforms.irc.channels)", ch)
		}
	}
	if cfg.Port == 0 {
		cfg.Port = 6667
		if cfg.TLS {
			cfg.Port = 6697
		}
	}
	if cfg.User == "" {
		cfg.User = cfg.Nick
	}
	if cfg.RealName == "" {
		cfg.RealName = "Hermes"
	}
	if cfg.LinesPerSecond <= 0 {
		cfg.LinesPerSecond = 1
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 4
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = time.Second
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = 2 * time.Minute
	}
	return &Adapter{cfg: cfg, limiter: rate.NewLimiter(rate.Limit(cfg.LinesPerSecond), cfg.Burst),
		log: cfg.Log.With().Str("platform", Name).Logger(), progress: map[string]int{}}, nil
}

// Name is "irc".
func (a *Adapter) Name() string { return Name }

// Connected reports whether the bot is registered and in its channels.
func (a *Adapter) Connected() bool {
	c := a.current()
	return c != nil && c.ready()
}

// Nick is the nick the bot has now ("" while not connected): Config.Nick,
// or a variant of it while someone else holds that.
func (a *Adapter) Nick() string {
	if c := a.current(); c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.nick
	}
	return ""
}

// LastError is why the last connection ended or failed (gw.ErrorReporter).
func (a *Adapter) LastError() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr, a.errAt
}

func (a *Adapter) current() *conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// Run connects, registers, joins the channels and hands what the bot is
// sent to in, reconnecting with backoff whenever the connection is lost,
// until ctx ends. It returns early only when the server refuses the
// bot for good (a wrong password, a ban).
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	backoff := a.cfg.ReconnectMin
	for {
		registered, err := a.session(ctx, in)
		if ctx.Err() != nil {
			return nil
		}
		var perm *gw.PermanentError
		if errors.As(err, &perm) {
			return err
		}
		if registered {
			backoff = a.cfg.ReconnectMin
		}
		a.mu.Lock()
		a.lastErr, a.errAt = err.Error(), time.Now()
		a.mu.Unlock()
		a.log.Warn().Err(err).Dur("retry_in", backoff).Msg("irc connection lost")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, a.cfg.ReconnectMax)
	}
}

// conn is one connection to the server.
type conn struct {
	nc  net.Conn
	wmu sync.Mutex

	mu         sync.Mutex
	nick       string // the nick the server knows us by
	self       string // nick!user@host, once the server told us
	registered bool
	joined     map[string]bool
	want       []string
}

func (c *conn) write(cmd string, params ...string) error {
	m := ircmsg.MakeMessage(nil, "", cmd, params...)
	line, err := m.LineBytesStrict(true, MaxLine)
	if err != nil && !errors.Is(err, ircmsg.ErrorBodyTooLong) {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = c.nc.Write(line)
	return err
}

func (c *conn) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.registered {
		return false
	}
	for _, ch := range c.want {
		if !c.joined[fold(ch)] {
			return false
		}
	}
	return true
}

// session runs one connection; it reports whether registration succeeded.
func (a *Adapter) session(ctx context.Context, in gw.Inbox) (bool, error) {
	addr := net.JoinHostPort(a.cfg.Server, strconv.Itoa(a.cfg.Port))
	d := net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Errorf("irc: connect to %s: %w", addr, err)
	}
	if a.cfg.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.cfg.TLSConfig != nil {
			tc = a.cfg.TLSConfig.Clone()
		}
		if tc.ServerName == "" {
			tc.ServerName = a.cfg.Server
		}
		t := tls.Client(nc, tc)
		if err := t.HandshakeContext(ctx); err != nil {
			nc.Close()
			return false, fmt.Errorf("irc: TLS with %s: %w", addr, err)
		}
		nc = t
	}
	c := &conn{nc: nc, nick: a.cfg.Nick, joined: map[string]bool{}, want: a.cfg.Channels}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			_ = c.write("QUIT", "shutting down")
			_ = nc.Close()
		case <-done:
			_ = nc.Close()
		}
	}()
	defer func() {
		a.mu.Lock()
		if a.conn == c {
			a.conn = nil
		}
		a.mu.Unlock()
	}()
	if a.cfg.Password != "" {
		if err := c.write("PASS", a.cfg.Password); err != nil {
			return false, err
		}
	}
	if err := c.write("NICK", c.nick); err != nil {
		return false, fmt.Errorf("irc: register: %w", err)
	}
	if err := c.write("USER", a.cfg.User, "0", "*", a.cfg.RealName); err != nil {
		return false, fmt.Errorf("irc: register: %w", err)
	}
	go a.keepalive(c, done)
	r := ircreader.NewIRCReader(nc)
	tries := 0
	for {
		_ = nc.SetReadDeadline(time.Now().Add(4 * time.Minute))
		raw, err := r.ReadLine()
		if err != nil {
			return c.isRegistered(), fmt.Errorf("irc: read from %s: %w", addr, err)
		}
		m, err := ircmsg.ParseLine(string(raw))
		if err != nil {
			continue
		}
		if err := a.handle(ctx, c, &m, in, &tries); err != nil {
			return c.isRegistered(), err
		}
	}
}

func (c *conn) isRegistered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered
}

// keepalive pings the server when the connection is quiet, so that a
// server gone without a word is noticed (the read deadline ends it).
func (a *Adapter) keepalive(c *conn, done chan struct{}) {
	t := time.NewTicker(90 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			_ = c.write("PING", "hermes")
		}
	}
}

func param(m *ircmsg.Message, i int) string {
	if i < len(m.Params) {
		return m.Params[i]
	}
	return ""
}

// handle handles one line from the server.
func (a *Adapter) handle(ctx context.Context, c *conn, m *ircmsg.Message, in gw.Inbox, tries *int) error {
	switch m.Command {
	case "PING":
		return c.write("PONG", m.Params...)
	case "001": // RPL_WELCOME: registered
		c.mu.Lock()
		c.registered = true
		c.nick = param(m, 0)
		// "Welcome to the Internet Relay Network nick!user@host"
		if f := strings.Fields(param(m, len(m.Params)-1)); len(f) > 0 && strings.Contains(f[len(f)-1], "!") {
			c.self = f[len(f)-1]
		}
		c.mu.Unlock()
		a.mu.Lock()
		a.conn = c
		a.mu.Unlock()
		a.log.Info().Str("nick", c.nick).Msg("irc registered")
		for _, ch := range a.cfg.Channels {
			if err := c.write("JOIN", ch); err != nil {
				return err
			}
		}
	case "396": // RPL_HOSTHIDDEN: a cloak replaces our host
		c.mu.Lock()
		if host := param(m, 1); host != "" && c.self != "" {
			before, _, _ := strings.Cut(c.self, "@")
			c.self = before + "@" + host
		}
		c.mu.Unlock()
	case "433", "436", "437": // nick in use / collision / unavailable
		if c.isRegistered() {
			return nil
		}
		*tries++
		if *tries > 8 {
			return fmt.Errorf("irc: no free nick near %q", a.cfg.Nick)
		}
		c.mu.Lock()
		c.nick = a.cfg.Nick + strings.Repeat("_", *tries)
		nick := c.nick
		c.mu.Unlock()
		a.log.Warn().Str("nick", nick).Msg("irc nick taken: trying another")
		return c.write("NICK", nick)
	case "432": // erroneous nick
		if !c.isRegistered() {
			return &gw.PermanentError{Err: fmt.Errorf("irc: the server refuses the nick %q: %s", a.cfg.Nick, param(m, len(m.Params)-1))}
		}
	case "464", "465": // password mismatch, banned
		return &gw.PermanentError{Err: fmt.Errorf("irc: the server refused the bot: %s", param(m, len(m.Params)-1))}
	case "ERROR":
		// Servers that refuse a password say so in ERROR alone
		// (ngIRCd: "Access denied: Bad password?").
		why := strings.ToLower(param(m, 0))
		if !c.isRegistered() && (strings.Contains(why, "password") || strings.Contains(why, "banned")) {
			return &gw.PermanentError{Err: fmt.Errorf("irc: the server refused the bot: %s", param(m, 0))}
		}
		return fmt.Errorf("irc: server error: %s", param(m, 0))
	case "NICK":
		nuh, _ := m.NUH()
		c.mu.Lock()
		if equalFold(nuh.Name, c.nick) {
			c.nick = param(m, 0)
			if c.self != "" {
				_, rest, _ := strings.Cut(c.self, "!")
				c.self = c.nick + "!" + rest
			}
		}
		c.mu.Unlock()
	case "JOIN":
		nuh, _ := m.NUH()
		c.mu.Lock()
		if equalFold(nuh.Name, c.nick) {
			c.joined[fold(param(m, 0))] = true
			c.self = nuh.Canonical()
		}
		c.mu.Unlock()
	case "KICK", "PART":
		ch := param(m, 0)
		who := param(m, 1)
		if m.Command == "PART" {
			nuh, _ := m.NUH()
			who = nuh.Name
		}
		c.mu.Lock()
		mine := equalFold(who, c.nick)
		if mine {
			delete(c.joined, fold(ch))
		}
		c.mu.Unlock()
		if mine && m.Command == "KICK" {
			a.log.Warn().Str("channel", ch).Msg("irc: kicked: joining again")
			return c.write("JOIN", ch)
		}
	case "401", "404": // no such nick / cannot send to channel
		a.log.Warn().Str("target", param(m, 1)).Str("reason", param(m, 2)).Msg("irc: message not delivered")
	case "PRIVMSG":
		return a.privmsg(ctx, c, m, in)
	}
	return nil
}

// privmsg hands a message to the router.
func (a *Adapter) privmsg(ctx context.Context, c *conn, m *ircmsg.Message, in gw.Inbox) error {
	nuh, err := m.NUH()
	if err != nil || len(m.Params) < 2 {
		return nil
	}
	target, text := m.Params[0], m.Params[1]
	c.mu.Lock()
	nick := c.nick
	c.mu.Unlock()
	if equalFold(nuh.Name, nick) || strings.HasPrefix(text, "\x01") {
		return nil // our own echo, or CTCP (ACTION, VERSION…)
	}
	text = ircfmt.Strip(text)
	msg := schema.Inbound{Platform: Name, User: UserID(a.cfg.AllowedUsers, nuh.Name, nuh.User, nuh.Host), UserName: nuh.Name,
		MessageID: uuid.NewString(), Chat: nuh.Name, ChatType: "dm"}
	if ok, id := m.GetTag("msgid"); ok && id != "" {
		msg.MessageID = id
	}
	if isChannel(target) {
		msg.Chat, msg.ChatType = target, "group"
		// Whether unaddressed channel messages are answered is the
		// router's choice (gateway.groups_without_mention).
		msg.Mentioned, text = addressed(text, nick)
	}
	msg.Text = alias(strings.TrimSpace(text))
	if err := in(ctx, msg); err != nil {
		// The bus is down: the message is lost to the router. Say so to
		// the sender rather than staying silent.
		a.log.Error().Err(err).Str("chat", msg.Chat).Msg("irc: publish an inbound message")
		_ = c.write("NOTICE", nuh.Name, "Sorry, I could not take that message; please send it again.")
	}
	return nil
}

// errNotConnected is a delivery attempt while no connection is up; the
// delivery is retried.
var errNotConnected = errors.New("irc: not connected")

// approvalHint replaces the router's "/approve" wording, which IRC
// clients would take as their own commands.
func approvalHint(text string) string {
	text = strings.ReplaceAll(text, "/approve", "!approve")
	return strings.ReplaceAll(text, "/deny", "!deny")
}

// Send writes out as PRIVMSGs to its chat (a nick or a channel): one or
// more per line, each within the 512 bytes the server relays, paced by
// the flood control. A delivery cut off by a lost connection resumes,
// when retried, after the lines already written.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	if out.Kind == schema.OutboundTyping || out.Kind == schema.OutboundDelta {
		return nil, nil // IRC has neither
	}
	target := out.Chat
	if target == "" || strings.ContainsAny(target, " ,\x00\r\n") {
		return nil, &gw.PermanentError{Err: fmt.Errorf("irc: %q is not a nick or channel", target)}
	}
	text := out.Text
	if out.Kind == schema.OutboundApproval {
		text = approvalHint(text)
	}
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	c := a.current()
	if c == nil {
		return nil, errNotConnected
	}
	c.mu.Lock()
	self := c.self
	if self == "" {
		// Not known yet: assume the longest user and host names.
		self = c.nick + "!~" + strings.Repeat("u", 10) + "@" + strings.Repeat("h", 63)
	}
	c.mu.Unlock()
	lines := Split(text, Budget(self, target))
	start := 0
	if out.ReplyID != "" {
		start = a.progress[out.ReplyID]
	}
	ids := make([]string, 0, len(lines))
	for i := start; i < len(lines); i++ {
		if err := a.limiter.Wait(ctx); err != nil {
			a.remember(out.ReplyID, i)
			return nil, err
		}
		if err := c.write("PRIVMSG", target, lines[i]); err != nil {
			a.remember(out.ReplyID, i)
			return nil, fmt.Errorf("irc: send to %s: %w", target, err)
		}
		ids = append(ids, fmt.Sprintf("%s:%d", target, a.seq.Add(1)))
	}
	if out.ReplyID != "" {
		delete(a.progress, out.ReplyID)
	}
	return ids, nil
}

// remember notes how far a reply got (bounded: a reply never retried is
// forgotten eventually).
func (a *Adapter) remember(replyID string, n int) {
	if replyID == "" || n == 0 {
		return
	}
	if len(a.progress) > 1024 {
		clear(a.progress)
	}
	a.progress[replyID] = n
}
