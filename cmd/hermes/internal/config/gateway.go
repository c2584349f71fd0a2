package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/email"
)

// GatewaySettings is the gateway's configuration after the environment.
type GatewaySettings struct {
	GatewayConfig
	Platforms PlatformsConfig
	// Drain bounds how long a stop waits for turns in flight.
	Drain time.Duration
	// Displays are how each platform's chats see a turn while it runs
	// (display: and streaming:), by platform name; EditEvery is the least
	// time between two edits of a chat's previews.
	Displays  map[string]gateway.Display
	EditEvery time.Duration
}

// envBool reads a boolean variable: set (ok) and true or not.
func envBool(name string) (bool, bool) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return false, false
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	}
	return false, true
}

// Gateway is the gateway's configuration: Hermes' environment variables
// (GATEWAY_*, API_SERVER_*, TELEGRAM_*, WEBHOOK_* and each platform's)
// over c's gateway: and platforms: sections, and the defaults.
func Gateway(c Config) (GatewaySettings, error) {
	s := GatewaySettings{GatewayConfig: c.Gateway, Platforms: c.Platforms, Drain: 30 * time.Second}
	var err error
	if s.Displays, s.EditEvery, err = resolveDisplay(c.Display, c.Streaming); err != nil {
		return s, err
	}
	if v := os.Getenv("GATEWAY_ALLOWED_USERS"); v != "" {
		s.AllowedUsers = append(s.AllowedUsers, gateway.SplitList(v)...)
	}
	if b, ok := envBool("GATEWAY_ALLOW_ALL_USERS"); ok {
		s.AllowAllUsers = b
	}
	s.Bus = first(os.Getenv("GATEWAY_BUS"), s.Bus)
	switch s.Busy {
	case "", "queue", "interrupt":
	default:
		return s, fmt.Errorf("gateway.busy %q: use queue or interrupt", s.Busy)
	}
	switch s.SessionReset.Mode {
	case "", "none":
	case "idle":
		if s.SessionReset.IdleMinutes <= 0 {
			s.SessionReset.IdleMinutes = 24 * 60
		}
	default:
		return s, fmt.Errorf("gateway.session_reset.mode %q: use none or idle", s.SessionReset.Mode)
	}
	if s.DrainTimeout != "" {
		d, err := time.ParseDuration(s.DrainTimeout)
		if err != nil || d < 0 {
			return s, fmt.Errorf("gateway.drain_timeout %q: use a duration such as 30s", s.DrainTimeout)
		}
		s.Drain = d
	}
	a := &s.Platforms.APIServer
	if b, ok := envBool("API_SERVER_ENABLED"); ok {
		a.Enabled = b
	}
	a.Key = first(os.Getenv("API_SERVER_KEY"), a.Key)
	a.Host = first(os.Getenv("API_SERVER_HOST"), a.Host, "127.0.0.1")
	if err := envPort("API_SERVER_PORT", &a.Port); err != nil {
		return s, err
	}
	if a.Port == 0 {
		a.Port = 8642
	}
	t := &s.Platforms.Telegram
	t.Token = first(os.Getenv("TELEGRAM_BOT_TOKEN"), t.Token)
	if v := os.Getenv("TELEGRAM_ALLOWED_USERS"); v != "" {
		t.AllowedUsers = append(t.AllowedUsers, gateway.SplitList(v)...)
	}
	t.APIURL = first(os.Getenv("TELEGRAM_API_URL"), t.APIURL)
	t.WebhookURL = first(os.Getenv("TELEGRAM_WEBHOOK_URL"), t.WebhookURL)
	t.WebhookListen = first(os.Getenv("TELEGRAM_WEBHOOK_LISTEN"), t.WebhookListen)
	t.WebhookSecret = first(os.Getenv("TELEGRAM_WEBHOOK_SECRET"), t.WebhookSecret)
	resolveSlack(&s.Platforms.Slack)
	resolveMatrix(&s.Platforms.Matrix)
	if err := resolveEmail(&s.Platforms.Email); err != nil {
		return s, err
	}
	w := &s.Platforms.Webhook
	if b, ok := envBool("WEBHOOK_ENABLED"); ok {
		w.Enabled = b
	}
	w.Secret = first(os.Getenv("WEBHOOK_SECRET"), w.Secret)
	w.Host = first(os.Getenv("WEBHOOK_HOST"), w.Host, "127.0.0.1")
	if err := envPort("WEBHOOK_PORT", &w.Port); err != nil {
		return s, err
	}
	if w.Port == 0 {
		w.Port = 8644
	}
	if err := resolveIRC(&s.Platforms.IRC); err != nil {
		return s, err
	}
	resolveXMPP(&s.Platforms.XMPP)
	h := &s.Platforms.HomeAssistant
	h.Token = first(os.Getenv("HASS_TOKEN"), h.Token)
	h.Extra.URL = first(os.Getenv("HASS_URL"), h.Extra.URL)
	return s, nil
}

// resolveEmail applies the environment over platforms.email.
func resolveEmail(e *EmailConfig) error {
	e.Address = first(os.Getenv("EMAIL_ADDRESS"), e.Address)
	e.Username = first(os.Getenv("EMAIL_USERNAME"), e.Username)
	e.Password = first(os.Getenv("EMAIL_PASSWORD"), e.Password)
	e.IMAPHost = first(os.Getenv("EMAIL_IMAP_HOST"), e.IMAPHost)
	e.SMTPHost = first(os.Getenv("EMAIL_SMTP_HOST"), e.SMTPHost)
	e.Mailbox = first(os.Getenv("EMAIL_MAILBOX"), e.Mailbox)
	e.PollInterval = first(os.Getenv("EMAIL_POLL_INTERVAL"), e.PollInterval)
	for name, port := range map[string]*int{"EMAIL_IMAP_PORT": &e.IMAPPort, "EMAIL_SMTP_PORT": &e.SMTPPort} {
		if v := os.Getenv(name); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("%s %q: not a port", name, v)
			}
			*port = p
		}
	}
	if v := os.Getenv("EMAIL_ALLOWED_USERS"); v != "" {
		e.AllowedUsers = append(e.AllowedUsers, gateway.SplitList(v)...)
	}
	for i, u := range e.AllowedUsers {
		n := email.NormAddress(u)
		if n == "" {
			return fmt.Errorf("platforms.email.allowed_users: %q is not a mail address", u)
		}
		e.AllowedUsers[i] = n
	}
	if _, err := e.PollEvery(); err != nil {
		return err
	}
	return nil
}

// resolveIRC applies IRC_* over platforms.irc.
func resolveIRC(c *IRCConfig) error {
	c.Server = first(os.Getenv("IRC_SERVER"), c.Server)
	c.Nick = first(os.Getenv("IRC_NICK"), c.Nick, "hermes")
	c.Password = first(os.Getenv("IRC_PASSWORD"), c.Password)
	if v := os.Getenv("IRC_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("IRC_PORT %q: not a port", v)
		}
		c.Port = p
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("platforms.irc.port %d: not a port", c.Port)
	}
	if b, ok := envBool("IRC_TLS"); ok {
		c.TLS = b
	}
	if v := os.Getenv("IRC_CHANNELS"); v != "" {
		c.Channels = append(c.Channels, gateway.SplitList(v)...)
	}
	if v := os.Getenv("IRC_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
	return nil
}

// resolveMatrix applies the MATRIX_* environment over platforms.matrix.
func resolveMatrix(m *MatrixConfig) {
	m.Homeserver = first(os.Getenv("MATRIX_HOMESERVER"), m.Homeserver)
	m.UserID = first(os.Getenv("MATRIX_USER_ID"), m.UserID)
	m.AccessToken = first(os.Getenv("MATRIX_ACCESS_TOKEN"), m.AccessToken)
	m.Password = first(os.Getenv("MATRIX_PASSWORD"), m.Password)
	if v := os.Getenv("MATRIX_ALLOWED_USERS"); v != "" {
		m.AllowedUsers = append(m.AllowedUsers, gateway.SplitList(v)...)
	}
}

// resolveSlack applies the SLACK_* environment over platforms.slack.
func resolveSlack(c *SlackConfig) {
	c.BotToken = first(os.Getenv("SLACK_BOT_TOKEN"), c.BotToken)
	c.AppToken = first(os.Getenv("SLACK_APP_TOKEN"), c.AppToken)
	c.SigningSecret = first(os.Getenv("SLACK_SIGNING_SECRET"), c.SigningSecret)
	c.EventsListen = first(os.Getenv("SLACK_EVENTS_LISTEN"), c.EventsListen)
	c.APIURL = first(os.Getenv("SLACK_API_URL"), c.APIURL)
	if v := os.Getenv("SLACK_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
}

// resolveXMPP applies XMPP_* over platforms.xmpp. Allowed users are bare
// JIDs, compared without case (as the adapter reports them).
func resolveXMPP(c *XMPPConfig) {
	c.JID = first(os.Getenv("XMPP_JID"), c.JID)
	c.Password = first(os.Getenv("XMPP_PASSWORD"), c.Password)
	c.Server = first(os.Getenv("XMPP_SERVER"), c.Server)
	if v := os.Getenv("XMPP_ROOMS"); v != "" {
		c.Rooms = append(c.Rooms, gateway.SplitList(v)...)
	}
	if v := os.Getenv("XMPP_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
	for i, u := range c.AllowedUsers {
		bare, _, _ := strings.Cut(strings.TrimSpace(u), "/")
		c.AllowedUsers[i] = strings.ToLower(bare)
	}
}

// envPort sets *port from the environment variable name when it is set,
// refusing a value that is not a port number (0 to 65535).
func envPort(name string, port *int) error {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%s %q: not a port", name, v)
	}
	*port = p
	return nil
}
