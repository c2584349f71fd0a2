package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// GatewayConfig is the gateway: section of config.yaml.
type GatewayConfig struct {
	// Bus is gochannel (default, in-process), nats://host:port or
	// tls://host:port (user:password@ or a token@ in the URL for NATS's
	// authentication).
	Bus string `yaml:"bus"`
	// BusTLS names the PEM files of a NATS connection with TLS: the CA
	// that signed the server's certificate, and this process's certificate
	// and key for a server that verifies clients (relative paths are the
	// home's; hermes cluster certs makes them).
	BusTLS ClusterTLS `yaml:"bus_tls"`
	// Busy is queue (default) or interrupt.
	Busy                 string   `yaml:"busy"`
	GroupsWithoutMention bool     `yaml:"groups_without_mention"`
	SharedGroupSessions  bool     `yaml:"shared_group_sessions"`
	AllowedUsers         []string `yaml:"allowed_users"`
	AllowAllUsers        bool     `yaml:"allow_all_users"`
	// Pairing lets unknown users in direct chats ask for a code (default on).
	Pairing      *bool              `yaml:"pairing"`
	SessionReset SessionResetConfig `yaml:"session_reset"`
	// DrainTimeout bounds how long a stop waits for turns in flight.
	DrainTimeout string `yaml:"drain_timeout"`
}

// SessionResetConfig is Hermes' session_reset: a chat idle for
// idle_minutes starts a new session (mode idle).
type SessionResetConfig struct {
	Mode        string `yaml:"mode"` // none (default) or idle
	IdleMinutes int    `yaml:"idle_minutes"`
}

// PlatformsConfig is the platforms: section.
type PlatformsConfig struct {
	APIServer APIServerConfig `yaml:"api_server"`
	Telegram  TelegramConfig  `yaml:"telegram"`
	Email     EmailConfig     `yaml:"email"`
	Webhook   WebhookConfig   `yaml:"webhook"`
	Slack     SlackConfig     `yaml:"slack"`
	IRC       IRCConfig       `yaml:"irc"`
	Matrix    MatrixConfig    `yaml:"matrix"`
	XMPP      XMPPConfig      `yaml:"xmpp"`
	// HomeAssistant is platforms.homeassistant.
	HomeAssistant HomeAssistantConfig `yaml:"homeassistant"`
}

// APIServerConfig is platforms.api_server (API_SERVER_* in the environment).
type APIServerConfig struct {
	Enabled bool   `yaml:"enabled"`
	Host    string `yaml:"host"`
	Port    int    `yaml:"port"`
	Key     string `yaml:"key"`
	// CORSOrigins lists origins allowed to call the API from a browser
	// (none by default).
	CORSOrigins []string `yaml:"cors_origins"`
	// Dashboard serves the web dashboard under /dashboard/ (default: on
	// when a key is set; it needs one).
	Dashboard *bool `yaml:"dashboard"`
	// MaxBodyBytes bounds a request body (default 10 MB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxInFlight bounds the turn requests open at once; more get 429
	// with Retry-After (default 256).
	MaxInFlight int `yaml:"max_in_flight"`
	// ModelRoutes is the allow-list of names a client may send as its
	// request's model: each maps to the model its turns run on. Any other
	// name runs the configured model (the Python agent's model_routes).
	ModelRoutes map[string]ModelRoute `yaml:"model_routes"`
	// Extra holds the same keys where the Python agent reads them
	// (platforms.api_server.extra).
	Extra struct {
		ModelRoutes map[string]ModelRoute `yaml:"model_routes"`
	} `yaml:"extra"`
}

// ModelRoute is one platforms.api_server.model_routes entry.
type ModelRoute struct {
	Model string `yaml:"model"`
	// Provider, APIKey and BaseURL are read so that a Python home's
	// routes load; routes run on the configured provider, and the gateway
	// leaves out (with a warning) a route that names another.
	Provider string `yaml:"provider"`
	APIKey   string `yaml:"api_key"`
	BaseURL  string `yaml:"base_url"`
}

// Routes is the merged allow-list of ModelRoutes and Extra.ModelRoutes
// (the first wins on a name in both).
func (a APIServerConfig) Routes() map[string]ModelRoute {
	if len(a.ModelRoutes)+len(a.Extra.ModelRoutes) == 0 {
		return nil
	}
	out := map[string]ModelRoute{}
	for k, v := range a.Extra.ModelRoutes {
		out[k] = v
	}
	for k, v := range a.ModelRoutes {
		out[k] = v
	}
	return out
}

// TelegramConfig is platforms.telegram (TELEGRAM_* in the environment).
type TelegramConfig struct {
	Token        string   `yaml:"token"`
	AllowedUsers []string `yaml:"allowed_users"`
	// APIURL points at another Bot API server (TELEGRAM_API_URL).
	APIURL string `yaml:"api_url"`
	// WebhookURL switches from long polling to a webhook.
	WebhookURL string `yaml:"webhook_url"`
	// WebhookListen is the webhook listener's address (default
	// 127.0.0.1:8443, behind a TLS reverse proxy).
	WebhookListen string `yaml:"webhook_listen"`
	// WebhookSecret is the secret Telegram echoes in each webhook call
	// (default: derived from the token).
	WebhookSecret string `yaml:"webhook_secret"`
}

// WebhookConfig is platforms.webhook.
type WebhookConfig struct {
	Enabled bool   `yaml:"enabled"`
	Host    string `yaml:"host"`
	Port    int    `yaml:"port"`
	// Secret is the default HMAC secret of routes (WEBHOOK_SECRET).
	Secret string                  `yaml:"secret"`
	Routes map[string]WebhookRoute `yaml:"routes"`
}

// WebhookRoute is one platforms.webhook.routes entry.
type WebhookRoute struct {
	Secret string `yaml:"secret"`
	// Prompt is a Go text/template over the JSON payload ({{.field}}).
	Prompt string `yaml:"prompt"`
	// Deliver is where the answer goes: PLATFORM:CHAT, or a callback URL
	// (http:// or https://); empty keeps it in the session only.
	Deliver string `yaml:"deliver"`
	// Session is delivery (default: a session per delivery) or route (one
	// session for all the route's deliveries, in order).
	Session string `yaml:"session"`
	// Images are dotted paths in the payload holding pictures (base64
	// data: URLs, or lists of them) the model sees with the prompt.
	Images []string `yaml:"images"`
}

// EmailConfig is platforms.email (EMAIL_* in the environment).
type EmailConfig struct {
	// Address is the bot's mail address (EMAIL_ADDRESS); setting it
	// turns the platform on.
	Address string `yaml:"address"`
	// Username logs in to IMAP and SMTP (EMAIL_USERNAME; default: the
	// address); Password is its password (EMAIL_PASSWORD).
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// IMAPHost and IMAPPort (EMAIL_IMAP_HOST, EMAIL_IMAP_PORT; 993).
	IMAPHost string `yaml:"imap_host"`
	IMAPPort int    `yaml:"imap_port"`
	// SMTPHost and SMTPPort (EMAIL_SMTP_HOST, EMAIL_SMTP_PORT; 587).
	SMTPHost string `yaml:"smtp_host"`
	SMTPPort int    `yaml:"smtp_port"`
	// Mailbox is the folder watched (EMAIL_MAILBOX; INBOX).
	Mailbox string `yaml:"mailbox"`
	// PollInterval spaces checks on servers without IDLE
	// (EMAIL_POLL_INTERVAL: seconds, or a duration such as 1m; 15s).
	PollInterval string `yaml:"poll_interval"`
	// AllowedUsers are the sender addresses allowed (EMAIL_ALLOWED_USERS),
	// compared without case and without display names.
	AllowedUsers []string `yaml:"allowed_users"`
	// Insecure allows the password over a connection without TLS to a
	// server not on this machine.
	Insecure bool `yaml:"insecure"`
}

// PollEvery is platforms.email.poll_interval as a duration (0: the default).
func (e EmailConfig) PollEvery() (time.Duration, error) {
	v := strings.TrimSpace(e.PollInterval)
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("platforms.email.poll_interval %q: use seconds (15) or a duration such as 1m", e.PollInterval)
	}
	return d, nil
}

// IRCConfig is platforms.irc (IRC_* in the environment).
type IRCConfig struct {
	// Server is the IRC server's host name (IRC_SERVER); the platform is
	// on when it is set.
	Server string `yaml:"server"`
	// Port defaults to 6667, or 6697 with TLS (IRC_PORT).
	Port int `yaml:"port"`
	// TLS connects with TLS (IRC_TLS).
	TLS bool `yaml:"tls"`
	// Nick is the bot's nick, "hermes" by default (IRC_NICK).
	Nick string `yaml:"nick"`
	// Password is the server password, if it wants one (IRC_PASSWORD).
	Password string `yaml:"password"`
	// Channels are joined on connecting (IRC_CHANNELS, comma-separated).
	Channels []string `yaml:"channels"`
	// AllowedUsers are nicks or nick!user@host masks (IRC_ALLOWED_USERS).
	AllowedUsers []string `yaml:"allowed_users"`
	// LinesPerSecond is the flood control's pace (1 by default).
	LinesPerSecond float64 `yaml:"lines_per_second"`
}

// MatrixConfig is platforms.matrix (MATRIX_* in the environment).
type MatrixConfig struct {
	// Homeserver is the client-server API's URL (MATRIX_HOMESERVER).
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot's Matrix id, @hermes:example.org (MATRIX_USER_ID).
	UserID string `yaml:"user_id"`
	// AccessToken authenticates the bot (MATRIX_ACCESS_TOKEN); without it
	// Password logs in (MATRIX_PASSWORD).
	AccessToken string `yaml:"access_token"`
	Password    string `yaml:"password"`
	// AllowedUsers are Matrix ids allowed to talk to the bot and to
	// invite it to rooms (MATRIX_ALLOWED_USERS, comma-separated).
	AllowedUsers []string `yaml:"allowed_users"`
	// Rooms are room ids or aliases the bot joins at start.
	Rooms []string `yaml:"rooms"`
	// PairingInvites accepts direct-chat invites from anyone, so that
	// they can ask for a pairing code (off: only allowed users' invites).
	PairingInvites bool `yaml:"pairing_invites"`
}

// SlackConfig is platforms.slack (SLACK_* in the environment).
type SlackConfig struct {
	// BotToken is the Bot User OAuth Token, xoxb-… (SLACK_BOT_TOKEN).
	BotToken string `yaml:"bot_token"`
	// AppToken is an app-level token, xapp-… with connections:write
	// (SLACK_APP_TOKEN): set, the gateway receives over Socket Mode.
	AppToken string `yaml:"app_token"`
	// SigningSecret checks Events API, slash command and interactivity
	// requests (SLACK_SIGNING_SECRET).
	SigningSecret string `yaml:"signing_secret"`
	// EventsListen is the Events API endpoint's address, behind a TLS
	// reverse proxy (SLACK_EVENTS_LISTEN; none by default).
	EventsListen string `yaml:"events_listen"`
	// AllowedUsers are Slack user ids, U… (SLACK_ALLOWED_USERS).
	AllowedUsers []string `yaml:"allowed_users"`
	// APIURL points at another Web API (SLACK_API_URL; tests).
	APIURL string `yaml:"api_url"`
}

// XMPPConfig is platforms.xmpp (XMPP_* in the environment).
type XMPPConfig struct {
	// JID is the bot's account, such as hermes@example.org (XMPP_JID);
	// the platform is on when it is set.
	JID string `yaml:"jid"`
	// Password is the account's password (XMPP_PASSWORD).
	Password string `yaml:"password"`
	// Server is host:port to connect to (XMPP_SERVER); empty looks up the
	// domain's SRV record.
	Server string `yaml:"server"`
	// Rooms are the multi-user chat rooms to join (XMPP_ROOMS,
	// comma-separated).
	Rooms []string `yaml:"rooms"`
	// Nick is the bot's nick in rooms (default: the JID's local part).
	Nick string `yaml:"nick"`
	// AllowedUsers are bare JIDs (XMPP_ALLOWED_USERS, comma-separated).
	AllowedUsers []string `yaml:"allowed_users"`
}

// HomeAssistantConfig is platforms.homeassistant, with the Python agent's
// keys (HASS_TOKEN and HASS_URL in the environment).
type HomeAssistantConfig struct {
	// Enabled false turns the platform off even with a token (default:
	// on when a token is set).
	Enabled *bool `yaml:"enabled"`
	// Token is a long-lived access token (HASS_TOKEN); the platform is on
	// when it is set.
	Token string `yaml:"token"`
	// Extra holds the platform's settings.
	Extra HomeAssistantExtra `yaml:"extra"`
}

// HomeAssistantExtra is platforms.homeassistant.extra.
type HomeAssistantExtra struct {
	// URL is the server's base URL (HASS_URL; default
	// http://homeassistant.local:8123).
	URL string `yaml:"url"`
	// WatchDomains and WatchEntities select the entities whose state
	// changes reach the agent; IgnoreEntities never do.
	WatchDomains   []string `yaml:"watch_domains"`
	WatchEntities  []string `yaml:"watch_entities"`
	IgnoreEntities []string `yaml:"ignore_entities"`
	// WatchAll takes every entity when neither watch list is given.
	WatchAll bool `yaml:"watch_all"`
	// CooldownSeconds is the least time between two messages about one
	// entity (default 30; 0: none).
	CooldownSeconds *int `yaml:"cooldown_seconds"`
}
