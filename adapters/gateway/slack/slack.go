// Package slack is the gateway's Slack adapter: it receives a Slack app's
// messages, `/hermes` slash commands and approval-button clicks over Socket
// Mode or the Events API (an HTTP endpoint whose requests are checked
// against Slack's v0 request signature), turns them into schema.Inbound for
// the router, and posts the router's replies with chat.postMessage as
// Slack mrkdwn cut at MaxMessage characters, approvals carrying Block Kit
// buttons. It knows Slack and nothing of sessions or models.
//
// Threads are sessions: a message in a channel starts (or continues) the
// thread under it, and the thread's ts is the chat's thread; a top-level
// direct message belongs to the DM itself.
//
// Delivery: an Events API request gets its 200, and a Socket Mode envelope
// its acknowledgement, only after the Inbox returned nil (the router
// recorded the message); Slack delivers what was not acknowledged again,
// and the router recognises a message it has by its id (channel:ts).
package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "slack"

// MaxMessage is the most characters the adapter puts in one message.
// Slack truncates a chat.postMessage text past 40,000 characters and
// recommends staying under 4,000; a Block Kit section (the text of an
// approval) holds at most 3,000. Every part is cut to 3,000 so that any
// part can be a section and long answers stay readable.
const MaxMessage = 3000

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Config configures the adapter.
type Config struct {
	// BotToken is the bot user OAuth token (xoxb-…).
	BotToken string
	// AppToken is an app-level token (xapp-…) with connections:write:
	// when set, the adapter receives over Socket Mode.
	AppToken string
	// SigningSecret checks the signatures of Events API, slash command
	// and interactivity requests (required with EventsListen).
	SigningSecret string
	// EventsListen, when set, is the address the Events API endpoint
	// binds (put a TLS reverse proxy in front). It serves /slack/events,
	// /slack/commands and /slack/interactive (each takes any of the three).
	EventsListen string
	// APIURL is the Web API (DefaultAPIURL when empty; slacktest in tests).
	APIURL string
	// PingInterval is how long Socket Mode waits for Slack's WebSocket
	// ping before it reconnects (30 s by default).
	PingInterval time.Duration
	// HTTPClient makes the requests (a fresh client by default).
	HTTPClient *http.Client
	// CacheDir is where images people share are downloaded to, for the
	// model to see them; "" keeps no files (the message says a picture
	// was sent).
	CacheDir string
	// MediaRoots are the directories a reply's MEDIA:<path> files may be
	// uploaded from (into the reply's thread, after its text); empty: none
	// is, and the gateway names them in the text instead.
	MediaRoots []string
	Log        zerolog.Logger
}

// callTimeout bounds one Web API call.
const callTimeout = 30 * time.Second

// maxRemembered bounds the threads remembered as the bot's.
const maxRemembered = 4096

// Adapter is the Slack platform. Create it with New.
type Adapter struct {
	cfg Config
	api *slack.Client
	log zerolog.Logger

	connected atomic.Bool
	botUser   atomic.Value // string: the bot's user id (U…)

	mu sync.Mutex
	// sent holds the ids of the parts of a reply delivered before one of
	// its parts failed, so that a retry sends only the rest.
	sent map[string][]string
	// uploaded counts the files of a reply uploaded before one failed,
	// so that a retry uploads only the rest.
	uploaded map[string]int
	// delivered holds the text ids of the replies with files that all
	// went (the last maxRemembered): sent again, they show nothing twice.
	delivered      map[string][]string
	deliveredOrder []string
	// threads are the threads ("channel:ts") the bot has posted in: a
	// message there is for the bot without naming it.
	threads     map[string]bool
	threadOrder []string

	bound gw.Bound

	// reacting are the messages ("channel:ts") wearing the
	// acknowledgement (see react.go); noReactions is set once Slack said
	// the token may not react.
	reacting    map[string]bool
	noReactions atomic.Bool
}

// New checks cfg and returns the adapter; it makes no request.
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.BotToken) == "" {
		return nil, errors.New("platforms.slack.bot_token is empty: set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…)")
	}
	if cfg.AppToken == "" && cfg.EventsListen == "" {
		return nil, errors.New("platforms.slack: set app_token (SLACK_APP_TOKEN, xapp-…) for Socket Mode, or events_listen for the Events API")
	}
	if cfg.EventsListen != "" && cfg.SigningSecret == "" {
		return nil, errors.New("platforms.slack.signing_secret is empty: the Events API endpoint needs SLACK_SIGNING_SECRET (Basic Information → App Credentials)")
	}
	if cfg.AppToken != "" && !strings.HasPrefix(cfg.AppToken, "xapp-") {
		return nil, errors.New("platforms.slack.app_token is not an app-level token (they start with xapp-): check SLACK_APP_TOKEN")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	opts := []slack.Option{slack.OptionAPIURL(cfg.APIURL), slack.OptionHTTPClient(cfg.HTTPClient)}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	a := &Adapter{cfg: cfg, api: slack.New(cfg.BotToken, opts...),
		log:  cfg.Log.With().Str("platform", Platform).Logger(),
		sent: map[string][]string{}, uploaded: map[string]int{}, delivered: map[string][]string{}, threads: map[string]bool{}, reacting: map[string]bool{}}
	a.botUser.Store("")
	return a, nil
}

// Name is "slack".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the adapter is receiving: Socket Mode connected,
// or the Events API endpoint listening after auth.test succeeded.
func (a *Adapter) Connected() bool { return a.connected.Load() }

// EventsAddr waits until the Events API endpoint is bound and returns its
// address (tests bind port 0); nil if ctx ends first.
func (a *Adapter) EventsAddr(ctx context.Context) net.Addr { return a.bound.Wait(ctx) }

func (a *Adapter) bot() string {
	s, _ := a.botUser.Load().(string)
	return s
}

// Run asks auth.test who the bot is (a refused token is a
// *gw.PermanentError), then receives over Socket Mode and/or the Events
// API endpoint until ctx ends.
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	who, err := a.api.AuthTestContext(cctx)
	cancel()
	if err != nil {
		a.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		err = a.classify(err)
		var perm *gw.PermanentError
		if errors.As(err, &perm) {
			return &gw.PermanentError{Err: fmt.Errorf("slack refused the bot token (%w): check SLACK_BOT_TOKEN", perm.Err)}
		}
		return fmt.Errorf("slack auth.test: %w", err)
	}
	a.botUser.Store(who.UserID)
	a.log.Info().Str("bot", who.UserID).Str("team", who.Team).Bool("socket_mode", a.cfg.AppToken != "").
		Bool("events_api", a.cfg.EventsListen != "").Msg("authenticated")

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 2)
	n := 0
	if a.cfg.EventsListen != "" {
		n++
		go func() { errs <- a.serveEvents(ctx, in) }()
	}
	if a.cfg.AppToken != "" {
		n++
		go func() { errs <- a.socket(ctx, in) }()
	}
	var first error
	for range n {
		err := <-errs
		if first == nil && err != nil {
			first = err
			stop() // one way in failed: end the other, Served restarts both
		}
	}
	a.connected.Store(false)
	if ctx.Err() != nil && first == nil {
		return nil
	}
	return first
}

// permanentCodes are Slack error codes no retry changes.
var permanentCodes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true, "token_expired": true,
	"no_permission": true, "missing_scope": true, "not_allowed_token_type": true, "invalid_token": true,
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "msg_too_long": true, "no_text": true,
	"invalid_blocks": true, "invalid_blocks_format": true, "restricted_action": true, "user_not_found": true,
	"cannot_dm_bot": true, "invalid_thread_ts": true, "thread_reply_not_available": true,
}

// classify maps a Web API failure onto the gateway's retry policy: HTTP 429
// (Retry-After) is a *gw.RetryAfterError, a refusal no retry changes (a
// bad token, a missing channel) a *gw.PermanentError, and the rest (the
// network, a 5xx) plain errors worth retrying. Tokens are taken out of the
// text.
func (a *Adapter) classify(err error) error {
	if err == nil {
		return nil
	}
	err = a.scrub(err)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		after := rl.RetryAfter
		if after <= 0 {
			after = time.Second
		}
		return &gw.RetryAfterError{After: after, Err: err}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		if se.Err == "ratelimited" {
			return &gw.RetryAfterError{After: time.Second, Err: err}
		}
		if permanentCodes[se.Err] {
			return &gw.PermanentError{Err: err}
		}
		return err
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusTooManyRequests && sc.Code != http.StatusRequestTimeout {
		return &gw.PermanentError{Err: err}
	}
	return err
}

// scrubbed is an error whose text no longer holds a token.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func (a *Adapter) scrub(err error) error {
	msg := err.Error()
	out := msg
	for _, s := range []string{a.cfg.BotToken, a.cfg.AppToken, a.cfg.SigningSecret} {
		if s != "" {
			out = strings.ReplaceAll(out, s, "<secret>")
		}
	}
	if out == msg {
		return err
	}
	return &scrubbed{msg: out, err: err}
}

// rememberThread keeps a thread the bot posted in; the oldest are
// forgotten first.
func (a *Adapter) rememberThread(channel, ts string) {
	if ts == "" {
		return
	}
	k := channel + ":" + ts
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.threads[k] {
		return
	}
	a.threads[k] = true
	a.threadOrder = append(a.threadOrder, k)
	for len(a.threadOrder) > maxRemembered {
		delete(a.threads, a.threadOrder[0])
		a.threadOrder = a.threadOrder[1:]
	}
}

func (a *Adapter) botThread(channel, ts string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.threads[channel+":"+ts]
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
