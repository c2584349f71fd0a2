// Package email is the gateway's email adapter: it receives a mailbox's
// new mail over IMAP (IDLE when the server has it, polling otherwise),
// turns each message into a schema.Inbound for the router, and sends the
// router's replies over SMTP as plain-text mail threaded under the message
// answered. It knows mail and nothing of sessions or models.
//
// A thread is a chat: its id is the sender's address and the thread's
// root Message-ID (the first of References), so every reply in a thread
// reaches the same session, and the sender's address is the user the
// allow-lists name.
//
// Delivery guarantees come from the order of things: a message is marked
// \Seen, and the last UID handled (with the mailbox's UIDVALIDITY) saved,
// only after the Inbox returned nil (the router recorded it); a message the
// gateway did not record is fetched again, and one it did record is not,
// even after a restart. Auto-replies, bounces, list mail and our own mail
// are never handed on, so two robots cannot answer each other for ever.
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "email"

// Defaults.
const (
	// DefaultPollInterval spaces mailbox checks on servers without IDLE.
	DefaultPollInterval = 15 * time.Second
	// DefaultIdleRefresh ends an IDLE that heard nothing after this long
	// and looks at the mailbox anyway (a lost notification costs no more).
	DefaultIdleRefresh = 5 * time.Minute
	// MaxMessage is the largest message fetched whole; a larger one is
	// read for its headers and text only up to this size.
	MaxMessage = 25 << 20
)

// Config configures the adapter.
type Config struct {
	// Address is the bot's own mail address: the From of its replies.
	// Mail from it is never answered.
	Address string
	// Username and Password log in to IMAP and SMTP (Username defaults
	// to Address).
	Username string
	Password string
	// IMAPHost and IMAPPort name the IMAP server (port 993 by default:
	// TLS; any other port uses STARTTLS when the server offers it).
	IMAPHost string
	IMAPPort int
	// SMTPHost and SMTPPort name the SMTP server (port 587 by default;
	// port 465 is TLS; others use STARTTLS when the server offers it).
	SMTPHost string
	SMTPPort int
	// Mailbox is the folder watched (INBOX by default).
	Mailbox string
	// Insecure allows sending the password without TLS to a server
	// that is not on this machine. Loopback servers never need it.
	Insecure bool
	// TLS configures TLS (the system's roots and the server's name by
	// default).
	TLS *tls.Config
	// PollInterval spaces checks when the server lacks IDLE
	// (DefaultPollInterval by default).
	PollInterval time.Duration
	// IdleRefresh bounds one IDLE (DefaultIdleRefresh by default).
	IdleRefresh time.Duration
	// StateDir keeps the last UID handled and the threads answered
	// (required: without it a restart would answer old mail again).
	StateDir string
	// CacheDir is where attachments are saved.
	CacheDir string
	// MediaRoots are the directories a reply's MEDIA:<path> files may be
	// attached from; empty: none is, and the gateway names them in the
	// text instead.
	MediaRoots []string
	// MaxAttachment caps one attachment's size (MaxMessage by default).
	MaxAttachment int64
	Log           zerolog.Logger
}

// Adapter is the email platform. Create it with New.
type Adapter struct {
	cfg  Config
	log  zerolog.Logger
	self string // the bot's address, lower case

	connected atomic.Bool
	idle      atomic.Bool // whether the last session used IDLE
	// smtpStartTLS is 1 once the SMTP server was seen to offer STARTTLS.
	smtpStartTLS atomic.Int32

	mu sync.Mutex
	st *state
	// lastErr is why the last IMAP session ended, for the status.
	lastErr   string
	lastErrAt time.Time

	smtpMu sync.Mutex
	smtp   *smtpConn // the kept SMTP connection, if any
}

// New checks cfg and loads the adapter's state; it makes no connection.
func New(cfg Config) (*Adapter, error) {
	cfg.Address = strings.TrimSpace(cfg.Address)
	self, ok := normAddress(cfg.Address)
	if !ok {
		return nil, fmt.Errorf("platforms.email.address %q is not a mail address: set EMAIL_ADDRESS to the bot's address", cfg.Address)
	}
	if cfg.Username == "" {
		cfg.Username = cfg.Address
	}
	if cfg.Password == "" {
		return nil, errors.New("platforms.email.password is empty: set EMAIL_PASSWORD")
	}
	if cfg.IMAPHost == "" {
		return nil, errors.New("platforms.email.imap_host is empty: set EMAIL_IMAP_HOST to the IMAP server's name")
	}
	if cfg.SMTPHost == "" {
		return nil, errors.New("platforms.email.smtp_host is empty: set EMAIL_SMTP_HOST to the SMTP server's name")
	}
	if cfg.IMAPPort == 0 {
		cfg.IMAPPort = 993
	}
	if cfg.SMTPPort == 0 {
		cfg.SMTPPort = 587
	}
	for key, p := range map[string]int{"imap_port": cfg.IMAPPort, "smtp_port": cfg.SMTPPort} {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("platforms.email.%s %d: not a port", key, p)
		}
	}
	if cfg.Mailbox == "" {
		cfg.Mailbox = "INBOX"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.IdleRefresh <= 0 {
		cfg.IdleRefresh = DefaultIdleRefresh
	}
	if cfg.MaxAttachment <= 0 {
		cfg.MaxAttachment = MaxMessage
	}
	if cfg.StateDir == "" {
		return nil, errors.New("email: no state directory configured")
	}
	st, err := loadState(filepath.Join(cfg.StateDir, "state.json"))
	if err != nil {
		return nil, err
	}
	return &Adapter{cfg: cfg, self: self, st: st, log: cfg.Log.With().Str("platform", Platform).Logger()}, nil
}

// Name is "email".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the adapter is logged in to the IMAP server.
func (a *Adapter) Connected() bool { return a.connected.Load() }

// LastError says why the last IMAP session ended (Run reconnects by
// itself, so gateway status learns it here).
func (a *Adapter) LastError() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr, a.lastErrAt
}

// Idling says whether the current (or last) IMAP session waits with IDLE
// rather than polling.
func (a *Adapter) Idling() bool { return a.idle.Load() }

// Run logs in to IMAP and hands new mail to in until ctx ends. It
// reconnects with backoff by itself; after three failed connections in a
// row it returns the error (so the gateway's status shows it, and Served
// starts it again). Refused credentials are a *gw.PermanentError.
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	wait, fails := time.Second, 0
	for ctx.Err() == nil {
		worked, err := a.session(ctx, in)
		a.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		var perm *gw.PermanentError
		if errors.As(err, &perm) {
			return err
		}
		if err != nil {
			a.mu.Lock()
			a.lastErr, a.lastErrAt = err.Error(), time.Now()
			a.mu.Unlock()
		}
		if worked {
			wait, fails = time.Second, 0
		}
		if fails++; fails >= 3 {
			return err
		}
		a.log.Warn().Err(err).Dur("retry_in", wait).Msg("imap session ended")
		sleep(ctx, wait)
		wait = min(wait*2, time.Minute)
	}
	return nil
}

// session is one IMAP connection: log in, select the mailbox, then
// alternate between handling new mail and waiting for more. worked says
// whether it got as far as the mailbox.
func (a *Adapter) session(ctx context.Context, in gw.Inbox) (worked bool, err error) {
	wake := make(chan struct{}, 1)
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	opts := &imapclient.Options{TLSConfig: a.tlsConfig(a.cfg.IMAPHost), UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				notify()
			}
		},
	}}
	c, err := a.dialIMAP(ctx, opts)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	defer c.Close()
	if err := c.Login(a.cfg.Username, a.cfg.Password).Wait(); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		var ie *imap.Error
		if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo && ie.Code != imap.ResponseCodeUnavailable && ie.Code != imap.ResponseCodeServerBug {
			return false, &gw.PermanentError{Err: fmt.Errorf("the IMAP server refused the login of %s (%s): check EMAIL_PASSWORD and the user name", a.cfg.Username, ie.Text)}
		}
		return false, fmt.Errorf("imap login: %w", err)
	}
	sel, err := c.Select(a.cfg.Mailbox, nil).Wait()
	if err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo {
			return false, &gw.PermanentError{Err: fmt.Errorf("imap: cannot open mailbox %q: %s", a.cfg.Mailbox, ie.Text)}
		}
		return false, fmt.Errorf("imap select %s: %w", a.cfg.Mailbox, err)
	}
	if err := a.validity(sel.UIDValidity); err != nil {
		return false, err
	}
	idle := c.Caps().Has(imap.CapIdle)
	a.idle.Store(idle)
	a.connected.Store(true)
	a.log.Info().Str("mailbox", a.cfg.Mailbox).Bool("idle", idle).Msg("connected")
	for {
		if err := a.fetchNew(ctx, c, sel.UIDValidity, in); err != nil {
			if ctx.Err() != nil {
				return true, nil
			}
			return true, err
		}
		if idle {
			if err := a.waitIdle(ctx, c, wake); err != nil {
				if ctx.Err() != nil {
					return true, nil
				}
				return true, fmt.Errorf("imap idle: %w", err)
			}
		} else {
			sleep(ctx, a.cfg.PollInterval)
			if err := c.Noop().Wait(); err != nil && ctx.Err() == nil {
				return true, fmt.Errorf("imap noop: %w", err)
			}
		}
		if ctx.Err() != nil {
			return true, nil
		}
	}
}

// waitIdle holds an IDLE until the mailbox grows, IdleRefresh passes or
// ctx ends.
func (a *Adapter) waitIdle(ctx context.Context, c *imapclient.Client, wake chan struct{}) error {
	cmd, err := c.Idle()
	if err != nil {
		return err
	}
	t := time.NewTimer(a.cfg.IdleRefresh)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
	case <-c.Closed():
	}
	if err := cmd.Close(); err != nil {
		return err
	}
	return cmd.Wait()
}

// dialIMAP connects: TLS on port 993, otherwise in the clear, upgraded
// with STARTTLS when the server offers it. Without TLS the password goes
// only to a loopback server, or where Insecure allows it.
func (a *Adapter) dialIMAP(ctx context.Context, opts *imapclient.Options) (*imapclient.Client, error) {
	addr := net.JoinHostPort(a.cfg.IMAPHost, strconv.Itoa(a.cfg.IMAPPort))
	d := &net.Dialer{Timeout: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("imap: %w", err)
	}
	if a.cfg.IMAPPort == 993 {
		tc := tls.Client(conn, opts.TLSConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("imap tls: %w", err)
		}
		return imapclient.New(tc, opts), nil
	}
	c := imapclient.New(conn, opts)
	if err := c.WaitGreeting(); err != nil {
		c.Close()
		return nil, fmt.Errorf("imap greeting: %w", err)
	}
	if c.Caps().Has(imap.CapStartTLS) {
		c.Close()
		if conn, err = d.DialContext(ctx, "tcp", addr); err != nil {
			return nil, fmt.Errorf("imap: %w", err)
		}
		sc, err := imapclient.NewStartTLS(conn, opts)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("imap starttls: %w", err)
		}
		return sc, nil
	}
	if !a.cfg.Insecure && !loopback(a.cfg.IMAPHost) {
		c.Close()
		return nil, &gw.PermanentError{Err: fmt.Errorf("the IMAP server %s offers no TLS: use port 993, or set platforms.email.insecure to send the password in the clear", addr)}
	}
	return c, nil
}

func (a *Adapter) tlsConfig(host string) *tls.Config {
	if a.cfg.TLS != nil {
		c := a.cfg.TLS.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		return c
	}
	return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
}

// validity starts over (new mail only, by \Seen) when the mailbox's
// UIDVALIDITY is not the one the saved UID belongs to: its UIDs now name
// other messages.
func (a *Adapter) validity(v uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st.UIDValidity == v {
		return nil
	}
	if a.st.UIDValidity != 0 {
		a.log.Warn().Uint32("was", a.st.UIDValidity).Uint32("now", v).Msg("UIDVALIDITY changed: handling unseen mail only")
	}
	a.st.UIDValidity, a.st.LastUID = v, 0
	return a.st.save()
}

// fetchNew hands every unseen message above the last UID handled to in,
// oldest first. A message in refuses is tried again (with backoff) before
// any later one, so the order of a thread is kept.
func (a *Adapter) fetchNew(ctx context.Context, c *imapclient.Client, validity uint32, in gw.Inbox) error {
	a.mu.Lock()
	last := a.st.LastUID
	a.mu.Unlock()
	crit := &imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen, imap.FlagDeleted}}
	if last > 0 {
		var set imap.UIDSet
		set.AddRange(imap.UID(last+1), 0)
		crit.UID = []imap.UIDSet{set}
	}
	data, err := c.UIDSearch(crit, nil).Wait()
	if err != nil {
		return fmt.Errorf("imap search: %w", err)
	}
	uids := data.AllUIDs()
	wait := time.Second
	for i := 0; i < len(uids); {
		uid := uids[i]
		if uint32(uid) <= last { // "N:*" includes the highest UID even when below N
			i++
			continue
		}
		err := a.handle(ctx, c, validity, uid, in)
		if err == nil {
			i, wait = i+1, time.Second
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if isConnErr(err) {
			return err
		}
		a.log.Warn().Err(err).Uint32("uid", uint32(uid)).Dur("retry_in", wait).Msg("message not accepted yet")
		sleep(ctx, wait)
		wait = min(wait*2, 30*time.Second)
	}
	return nil
}

// handle fetches one message and hands it on (or not: see skip), then
// remembers it as handled and marks it \Seen.
func (a *Adapter) handle(ctx context.Context, c *imapclient.Client, validity uint32, uid imap.UID, in gw.Inbox) error {
	raw, err := a.fetch(c, uid)
	if err != nil {
		return &connErr{err}
	}
	m, err := a.parse(raw, validity, uid)
	if err != nil {
		// Not mail we can read: leave it for a person, never retry it.
		a.log.Warn().Err(err).Uint32("uid", uint32(uid)).Msg("unreadable message skipped")
		return a.done(c, uid, false)
	}
	if why := a.skip(m); why != "" {
		a.log.Info().Str("from", m.from).Str("message_id", m.id).Str("reason", why).Msg("not answered")
		return a.done(c, uid, false)
	}
	msg, err := a.inbound(m)
	if err != nil {
		return err
	}
	if msg.Text == "" {
		a.log.Info().Err(m.broken).Str("from", m.from).Str("message_id", m.id).Msg("empty mail not answered")
		return a.done(c, uid, false)
	}
	if err := in(ctx, msg); err != nil {
		return err
	}
	a.remember(m)
	return a.done(c, uid, true)
}

// done records uid as handled and, for mail handed on, marks it \Seen
// (auto-replies and the like stay unread, for a person to look at).
func (a *Adapter) done(c *imapclient.Client, uid imap.UID, seen bool) error {
	a.mu.Lock()
	if uint32(uid) > a.st.LastUID {
		a.st.LastUID = uint32(uid)
	}
	err := a.st.save()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if !seen {
		return nil
	}
	if err := c.Store(imap.UIDSetNum(uid), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
		return &connErr{fmt.Errorf("imap store \\Seen: %w", err)}
	}
	return nil
}

// fetch reads a message without marking it \Seen; one over MaxMessage is
// read only that far (its text and the attachments that fit).
func (a *Adapter) fetch(c *imapclient.Client, uid imap.UID) ([]byte, error) {
	section := &imap.FetchItemBodySection{Peek: true, Partial: &imap.SectionPartial{Offset: 0, Size: MaxMessage}}
	msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		return nil, fmt.Errorf("imap fetch %d: %w", uid, err)
	}
	for _, m := range msgs {
		if m.UID == uid {
			for _, s := range m.BodySection {
				return s.Bytes, nil
			}
		}
	}
	return nil, fmt.Errorf("imap fetch %d: the server returned no body", uid)
}

// connErr marks a failure of the IMAP connection: the session ends and
// Run reconnects.
type connErr struct{ err error }

func (e *connErr) Error() string { return e.err.Error() }
func (e *connErr) Unwrap() error { return e.err }

func isConnErr(err error) bool {
	var ce *connErr
	return errors.As(err, &ce)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

var _ gw.Platform = (*Adapter)(nil)
var _ gw.Connector = (*Adapter)(nil)
var _ gw.ErrorReporter = (*Adapter)(nil)
