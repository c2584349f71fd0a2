// Package telegram is the gateway's Telegram adapter: it receives a bot's
// updates over the Bot API (long polling, or a webhook when one is
// configured), turns them into schema.Inbound for the router, and sends the
// router's replies back as HTML messages cut to Telegram's size limit. It
// knows Telegram and nothing of sessions or models.
//
// Delivery guarantees come from the order of things: in polling mode the
// offset that confirms an update to Telegram moves past it only after the
// Inbox returned nil (the router recorded the message), and in webhook mode
// Telegram gets its 200 only then; an update the gateway did not record is
// delivered again, and one it did record is recognised by its message id.
package telegram

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mymmrac/telego"
	ta "github.com/mymmrac/telego/telegoapi"
	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "telegram"

// Limits of the Bot API.
const (
	// MaxMessage is the longest message text, in UTF-16 code units after
	// entity parsing.
	MaxMessage = 4096
	// MaxDownload is the largest file a bot may download (getFile).
	MaxDownload = 20 << 20
)

// DefaultAPIURL is Telegram's Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// Config configures the adapter.
type Config struct {
	// Token is the bot's token from @BotFather.
	Token string
	// APIURL is the Bot API server (DefaultAPIURL when empty): a local
	// telegram-bot-api server, or an emulator in tests.
	APIURL string
	// WebhookURL, when set, switches from long polling to a webhook: the
	// public URL Telegram posts updates to. Its path is the path served.
	WebhookURL string
	// WebhookListen is the address the webhook listener binds
	// (127.0.0.1:8443 by default: put a TLS reverse proxy in front).
	WebhookListen string
	// WebhookSecret is the secret Telegram sends back in the
	// X-Telegram-Bot-Api-Secret-Token header (derived from the token when
	// empty, so it stays the same across restarts).
	WebhookSecret string
	// CacheDir is where attachments are downloaded to.
	CacheDir string
	// MaxDownload caps an attachment's size (MaxDownload by default).
	MaxDownload int64
	// PollTimeout is getUpdates' long-polling timeout (30 s by default).
	PollTimeout time.Duration
	// PollInterval spaces getUpdates calls that came back empty at once,
	// from servers that do not hold the request (1 s by default).
	PollInterval time.Duration
	// HTTPClient makes the requests (a fresh client by default). Deadlines
	// come from contexts, so it should have no Timeout of its own.
	HTTPClient *http.Client
	Log        zerolog.Logger
	// MediaRoots are the directories a reply's MEDIA:<path> files may be
	// sent from (none: no file is sent).
	MediaRoots []string
	// Speak, when set, speaks text as Ogg/Opus audio; with VoiceReplies
	// the answer to a voice memo comes as a voice note too (voice.auto_tts).
	Speak        func(ctx context.Context, text string) ([]byte, error)
	VoiceReplies bool
}

// SecretHeader is the header in which Telegram echoes a webhook's secret.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// allowedUpdates are the update kinds the adapter asks for; edits,
// reactions and the rest start no turn.
var allowedUpdates = []string{"message", "callback_query"}

// callTimeout bounds one Bot API call other than getUpdates and downloads.
const callTimeout = 30 * time.Second

// Adapter is the Telegram platform. Create it with New.
type Adapter struct {
	cfg    Config
	bot    *telego.Bot
	client *http.Client
	log    zerolog.Logger
	secret string

	connected atomic.Bool
	botID     atomic.Int64
	botName   atomic.Value // string: the username, without @

	// offset is the next update id to ask for; only Run touches it.
	offset int

	mu sync.Mutex
	// sent holds the ids of the parts of a reply delivered before one
	// of its parts failed, so that a retry sends only the rest.
	sent map[string][]string
	// buttons maps an approval message ("chat:message") to the router's
	// key of its chat, for the callbacks its buttons produce.
	buttons     map[string]string
	buttonOrder []string
	// tries counts the attempts at an update whose attachments failed to
	// download.
	tries map[int]int
	// sentMedia counts the files and voice note of a reply sent before
	// one failed; voiceIn holds the voice memos received (for
	// VoiceReplies), oldest first in voiceOrder.
	sentMedia  map[string]int
	voiceIn    map[string]struct{}
	voiceOrder []string

	bound gw.Bound
}

// maxButtons bounds the approval messages remembered for callbacks.
const maxButtons = 1024

// New checks cfg and returns the adapter; it makes no request.
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("platforms.telegram.token is empty: set TELEGRAM_BOT_TOKEN to the token @BotFather gave you")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("platforms.telegram.api_url %q: use an http(s) URL such as %s", cfg.APIURL, DefaultAPIURL)
	}
	if cfg.WebhookURL != "" {
		u, err := url.Parse(cfg.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("platforms.telegram.webhook_url %q: use the public https URL Telegram should post to", cfg.WebhookURL)
		}
	}
	if cfg.WebhookListen == "" {
		cfg.WebhookListen = "127.0.0.1:8443"
	}
	if cfg.MaxDownload <= 0 {
		cfg.MaxDownload = MaxDownload
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	secret := cfg.WebhookSecret
	if secret == "" {
		h := sha256.Sum256([]byte("hermes telegram webhook\x00" + cfg.Token))
		secret = hex.EncodeToString(h[:16])
	}
	bot, err := telego.NewBot(cfg.Token, telego.WithAPIServer(cfg.APIURL), telego.WithHTTPClient(cfg.HTTPClient),
		telego.WithRequestConstructor(objectBodies{}), telego.WithDiscardLogger())
	if errors.Is(err, telego.ErrInvalidToken) {
		return nil, errors.New("platforms.telegram.token is not a bot token (they look like 123456789:AAE…, 35 characters after the colon): check TELEGRAM_BOT_TOKEN")
	}
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	a := &Adapter{cfg: cfg, bot: bot, client: cfg.HTTPClient, secret: secret,
		log:  cfg.Log.With().Str("platform", Platform).Logger(),
		sent: map[string][]string{}, buttons: map[string]string{}, tries: map[int]int{}, sentMedia: map[string]int{}, voiceIn: map[string]struct{}{}}
	a.botName.Store("")
	return a, nil
}

// Name is "telegram".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the last call to Telegram's update source
// (getMe, getUpdates, setWebhook) succeeded.
func (a *Adapter) Connected() bool { return a.connected.Load() }

// WebhookAddr waits until the webhook listener is bound and returns its
// address (tests bind port 0); nil if ctx ends first.
func (a *Adapter) WebhookAddr(ctx context.Context) net.Addr { return a.bound.Wait(ctx) }

// Run asks getMe who the bot is (a refused token is a *gw.PermanentError),
// then receives updates by long polling or, with a webhook URL, on the
// webhook, handing each to in until ctx ends.
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	me, err := a.bot.GetMe(cctx)
	cancel()
	if err != nil {
		a.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		err = a.classify(err)
		var api *ta.Error
		if errors.As(err, &api) && (api.ErrorCode == http.StatusUnauthorized || api.ErrorCode == http.StatusNotFound) {
			return &gw.PermanentError{Err: fmt.Errorf("telegram refused the bot token (%w): check TELEGRAM_BOT_TOKEN", err)}
		}
		return fmt.Errorf("telegram getMe: %w", err)
	}
	a.botID.Store(me.ID)
	a.botName.Store(me.Username)
	if a.cfg.WebhookURL == "" {
		// With a webhook, connected means registered (runWebhook).
		a.connected.Store(true)
	}
	a.log.Info().Str("bot", "@"+me.Username).Bool("webhook", a.cfg.WebhookURL != "").Msg("connected")
	if a.cfg.WebhookURL != "" {
		return a.runWebhook(ctx, in)
	}
	return a.poll(ctx, in)
}

// poll is the long-polling loop.
func (a *Adapter) poll(ctx context.Context, in gw.Inbox) error {
	// getUpdates is refused while a webhook is set (by an earlier run in
	// webhook mode, say). Pending updates are kept.
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	err := a.bot.DeleteWebhook(cctx, &telego.DeleteWebhookParams{})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram deleteWebhook: %w", a.classify(err))
	}
	var (
		batch []telego.Update
		fails int
		wait  = time.Second
	)
	for ctx.Err() == nil {
		if len(batch) == 0 {
			start := time.Now()
			pctx, cancel := context.WithTimeout(ctx, a.cfg.PollTimeout+15*time.Second)
			ups, err := a.bot.GetUpdates(pctx, &telego.GetUpdatesParams{Offset: a.offset,
				Timeout: int(a.cfg.PollTimeout / time.Second), AllowedUpdates: allowedUpdates})
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.connected.Store(false)
				err = a.classify(err)
				var perm *gw.PermanentError
				if errors.As(err, &perm) {
					return &gw.PermanentError{Err: fmt.Errorf("telegram getUpdates: %w", err)}
				}
				// A few failures in a row end Run, so that the status
				// shows the error; Served starts it again.
				if fails++; fails >= 3 {
					return fmt.Errorf("telegram getUpdates: %w", err)
				}
				a.log.Warn().Err(err).Dur("retry_in", retryDelay(err, wait)).Msg("getUpdates failed")
				sleep(ctx, retryDelay(err, wait))
				wait = min(wait*2, 30*time.Second)
				continue
			}
			fails, wait = 0, time.Second
			a.connected.Store(true)
			batch = ups
			if len(ups) == 0 && time.Since(start) < a.cfg.PollTimeout/2 {
				// A server that does not hold the request: do not spin.
				sleep(ctx, a.cfg.PollInterval)
			}
			continue
		}
		u := batch[0]
		if err := a.handle(ctx, u, in); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Not recorded: the offset stays, and the update is tried
			// again (Telegram would deliver it again after a crash too).
			a.log.Warn().Err(err).Int("update", u.UpdateID).Dur("retry_in", wait).Msg("update not accepted yet")
			sleep(ctx, wait)
			wait = min(wait*2, 30*time.Second)
			continue
		}
		wait = time.Second
		batch = batch[1:]
		a.offset = u.UpdateID + 1
	}
	return nil
}

// handle turns one update into an inbound message and hands it to in; nil
// means the update needs no second look (handed over, or not for us).
func (a *Adapter) handle(ctx context.Context, u telego.Update, in gw.Inbox) error {
	switch {
	case u.Message != nil:
		msg, ok, err := a.inbound(ctx, u.UpdateID, u.Message)
		if err != nil || !ok {
			return err
		}
		if err := in(ctx, msg); err != nil {
			return err
		}
		a.mu.Lock()
		delete(a.tries, u.UpdateID)
		a.mu.Unlock()
		return nil
	case u.CallbackQuery != nil:
		return a.callback(ctx, u.CallbackQuery, in)
	}
	return nil
}

// classify maps a Bot API failure onto the gateway's retry policy and
// takes the token out of its text (net/http errors quote the URL, and the
// token is part of every Bot API URL).
func (a *Adapter) classify(err error) error {
	if err == nil {
		return nil
	}
	err = a.scrub(err)
	var api *ta.Error
	if !errors.As(err, &api) {
		return err // the network, a 5xx: worth retrying
	}
	switch api.ErrorCode {
	case http.StatusTooManyRequests:
		after := time.Second
		if api.Parameters != nil && api.Parameters.RetryAfter > 0 {
			after = time.Duration(api.Parameters.RetryAfter) * time.Second
		}
		return &gw.RetryAfterError{After: after, Err: err}
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		// Chat not found, bot blocked by the user, kicked from the
		// group, a bad token: no retry changes these.
		return &gw.PermanentError{Err: err}
	}
	return err
}

// objectBodies sends a method without parameters (getMe) with the body
// {} rather than null: Bot API servers built on common JSON middleware
// (telegram-test-api's express, for one) refuse a bare null.
type objectBodies struct{ ta.DefaultConstructor }

func (c objectBodies) JSONRequest(parameters any) (*ta.RequestData, error) {
	if parameters == nil {
		return &ta.RequestData{ContentType: ta.ContentTypeJSON, BodyRaw: []byte("{}")}, nil
	}
	return c.DefaultConstructor.JSONRequest(parameters)
}

// scrubbed is an error whose text no longer holds the bot token.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func (a *Adapter) scrub(err error) error {
	if err == nil || !strings.Contains(err.Error(), a.cfg.Token) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), a.cfg.Token, "<token>"), err: err}
}

func retryDelay(err error, wait time.Duration) time.Duration {
	var ra *gw.RetryAfterError
	if errors.As(err, &ra) && ra.After > 0 {
		return ra.After
	}
	return wait
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (a *Adapter) me() (int64, string) {
	name, _ := a.botName.Load().(string)
	return a.botID.Load(), name
}

// messageID is the gateway's id of a Telegram message: message ids are
// unique only within their chat.
func messageID(chat int64, id int) string {
	return strconv.FormatInt(chat, 10) + ":" + strconv.Itoa(id)
}

var _ gw.Platform = (*Adapter)(nil)
var _ gw.Connector = (*Adapter)(nil)
