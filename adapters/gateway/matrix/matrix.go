// Package matrix is the gateway's Matrix adapter: it follows a bot
// account's /sync stream with mautrix-go, turns room messages into
// schema.Inbound for the router (a room is a chat, a thread — an m.thread
// relation — is a chat of its own, a room of two members is a direct chat),
// joins rooms it is invited to by allowed users, and sends the router's
// replies back as Markdown rendered to Matrix HTML, cut into parts of at
// most MaxMessage characters. It knows Matrix and nothing of sessions or
// models. End-to-end encrypted rooms are not supported.
//
// Delivery guarantees come from the order of things: the sync token that
// confirms a batch of events moves on (and is saved) only after the Inbox
// returned nil for every message in it, so after a crash the batch is
// fetched again and the router recognises what it already recorded by the
// event id. Replies are sent with transaction ids derived from the reply,
// so a retried send is not shown twice.
package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Platform is the adapter's name: the source of its sessions and the
// suffix of its outbound topic.
const Platform = "matrix"

// MaxMessage is the longest part of an answer, in characters (UTF-16 code
// units) of Markdown. Matrix limits a whole event to 64 KiB of JSON; a part
// whose event would still be too large after HTML rendering and JSON
// escaping is cut again.
const MaxMessage = 16000

// maxEventBytes is the size an event's content may reach (the server adds
// its own fields to the 65,536 bytes it allows).
const maxEventBytes = 60000

// DeviceID is the device a password login creates and then reuses, so
// restarts do not pile up devices on the account.
const DeviceID = "HERMES"

// Config configures the adapter.
type Config struct {
	// Homeserver is the client-server API's base URL (https://matrix.org).
	Homeserver string
	// UserID is the bot's Matrix id (@hermes:example.org). With an access
	// token it may be empty: whoami tells it.
	UserID string
	// AccessToken authenticates the bot; when empty, Password logs in.
	AccessToken string
	Password    string
	// AllowedUsers are the Matrix ids whose invites the bot accepts.
	AllowedUsers []string
	// AllowAll accepts every invite (the gateway lets everyone in).
	AllowAll bool
	// PairingInvites accepts invites to direct chats from anyone, so that
	// someone not yet allowed can ask for a pairing code there (the router
	// still answers nothing else until the code is approved).
	PairingInvites bool
	// Rooms are room ids or aliases the bot joins when it starts.
	Rooms []string
	// StateDir keeps the sync token between runs (matrix-sync.json). When
	// empty the token lives in memory only, and a restart skips what was
	// sent while the adapter was down.
	StateDir string
	// CacheDir receives the images people send (m.image), for the
	// gateway to show the model; empty: images are not downloaded.
	CacheDir string
	// MediaRoots are the directories a reply's MEDIA:<path> files may be
	// sent from (uploaded, then sent as m.image, m.audio or m.file);
	// empty: none is, and the gateway names them in the text instead.
	MediaRoots []string
	// SyncTimeout is /sync's long-polling timeout (30 s by default).
	SyncTimeout time.Duration
	// HTTPClient makes the requests (a fresh client by default). Deadlines
	// come from contexts, so it should have no Timeout of its own.
	HTTPClient *http.Client
	Log        zerolog.Logger
}

// callTimeout bounds one API call other than /sync.
const callTimeout = 30 * time.Second

// Adapter is the Matrix platform. Create it with New.
type Adapter struct {
	cfg     Config
	cli     *mautrix.Client
	log     zerolog.Logger
	allowed map[id.UserID]bool
	start   time.Time

	// cred guards the client's credentials (AccessToken, UserID,
	// DeviceID): Run's logins write them while Send may be sending.
	cred sync.RWMutex

	// relogin asks Run for a new password login (Send met a revoked
	// token); stopSync cuts Run's /sync short for it.
	relogin  atomic.Bool
	syncMu   sync.Mutex
	stopSync context.CancelFunc

	connected   atomic.Bool
	displayName atomic.Value // string
	ready       chan struct{}
	readyOnce   sync.Once

	// since is the sync token of the events handed over; only Run
	// touches it after loading.
	since string

	mu sync.Mutex
	// members caches how many members a room has joined (a room of
	// two is a direct chat); an m.room.member event drops the entry.
	members map[id.RoomID]int
	// ours holds recent events the bot sent, and threads the threads it
	// answered in: a reply to either mentions the bot.
	ours      map[id.EventID]bool
	oursOrder []id.EventID
	threads   map[id.EventID]bool
	// encrypted holds the rooms told that the bot cannot read them.
	encrypted map[id.RoomID]bool
}

// maxRemembered bounds the bot's events and threads remembered.
const maxRemembered = 4096

// New checks cfg and returns the adapter; it makes no request.
func New(cfg Config) (*Adapter, error) {
	cfg.Homeserver = strings.TrimRight(strings.TrimSpace(cfg.Homeserver), "/")
	if cfg.Homeserver == "" {
		return nil, errors.New("platforms.matrix.homeserver is empty: set MATRIX_HOMESERVER to your homeserver's URL (https://matrix.example.org)")
	}
	if u, err := url.Parse(cfg.Homeserver); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("platforms.matrix.homeserver %q: use an http(s) URL such as https://matrix.example.org", cfg.Homeserver)
	}
	if cfg.AccessToken == "" && cfg.Password == "" {
		return nil, errors.New("platforms.matrix: set access_token (MATRIX_ACCESS_TOKEN) or password for the bot's account")
	}
	if cfg.UserID != "" {
		if _, _, err := id.UserID(cfg.UserID).Parse(); err != nil {
			return nil, fmt.Errorf("platforms.matrix.user_id %q: a Matrix id looks like @hermes:example.org", cfg.UserID)
		}
	} else if cfg.AccessToken == "" {
		return nil, errors.New("platforms.matrix.user_id is empty: a password login needs the bot's Matrix id (MATRIX_USER_ID)")
	}
	allowed := map[id.UserID]bool{}
	for _, u := range cfg.AllowedUsers {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.HasPrefix(u, "@") || !strings.Contains(u, ":") {
			return nil, fmt.Errorf("platforms.matrix.allowed_users: %q is not a Matrix id (@user:server)", u)
		}
		allowed[id.UserID(u)] = true
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("platforms.matrix.homeserver: %w", err)
	}
	cli.Client = cfg.HTTPClient
	// Retries and rate limits are the gateway's business: a 429 comes
	// back as a *gw.RetryAfterError rather than a sleep in the library.
	cli.DefaultHTTPRetries = 0
	cli.IgnoreRateLimit = true
	cli.UserAgent = "hermes-gateway (mautrix-go " + mautrix.Version + ")"
	a := &Adapter{cfg: cfg, cli: cli, allowed: allowed, start: time.Now(), ready: make(chan struct{}),
		log:     cfg.Log.With().Str("platform", Platform).Logger(),
		members: map[id.RoomID]int{}, ours: map[id.EventID]bool{}, threads: map[id.EventID]bool{}, encrypted: map[id.RoomID]bool{}}
	return a, nil
}

// Name is "matrix".
func (a *Adapter) Name() string { return Platform }

// Connected says whether the last /sync succeeded.
func (a *Adapter) Connected() bool { return a.connected.Load() }

// Ready is closed once the first /sync after the start was handled: from
// then on, what is sent to the bot's rooms is answered.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Run logs in (or checks the access token with whoami: a refused token
// is a *gw.PermanentError), joins the configured rooms, then follows
// /sync, handing each message to in until ctx ends.
func (a *Adapter) Run(ctx context.Context, in gw.Inbox) error {
	if err := a.login(ctx); err != nil {
		a.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for _, room := range a.cfg.Rooms {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := a.cli.JoinRoom(cctx, room, nil)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A room that cannot be joined (a mistyped alias: some
			// servers answer 500 for those) must not keep the bot from
			// its other rooms: say so, try again at the next start.
			a.log.Error().Err(classify(err)).Str("room", room).Msg("cannot join a configured room: check platforms.matrix.rooms")
		}
	}
	if a.since == "" {
		a.since = a.loadSince()
	}
	return a.sync(ctx, in)
}

// login makes sure the client has a token and knows the bot's id.
func (a *Adapter) login(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if a.cli.AccessToken == "" {
		resp, err := a.cli.Login(cctx, &mautrix.ReqLogin{Type: mautrix.AuthTypePassword,
			Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: a.cfg.UserID},
			Password:   a.cfg.Password, DeviceID: DeviceID, InitialDeviceDisplayName: "Hermes gateway"})
		if err != nil {
			err = classify(err)
			var perm *gw.PermanentError
			if errors.As(err, &perm) {
				return &gw.PermanentError{Err: fmt.Errorf("matrix refused the login of %s (%w): check platforms.matrix.password", a.cfg.UserID, err)}
			}
			return fmt.Errorf("matrix login: %w", err)
		}
		a.cred.Lock()
		a.cli.AccessToken, a.cli.UserID, a.cli.DeviceID = resp.AccessToken, resp.UserID, resp.DeviceID
		a.cred.Unlock()
		a.log.Info().Str("user", string(resp.UserID)).Str("device", string(resp.DeviceID)).Msg("logged in")
		a.loadDisplayName(cctx)
		return nil
	}
	who, err := a.cli.Whoami(cctx)
	if err != nil {
		err = classify(err)
		if a.cfg.Password != "" && errors.Is(err, mautrix.MUnknownToken) {
			// The token of an earlier login was revoked.
			return a.newLogin(ctx)
		}
		if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken) || errors.Is(err, mautrix.MForbidden) {
			return &gw.PermanentError{Err: fmt.Errorf("matrix refused the access token (%w): check MATRIX_ACCESS_TOKEN", err)}
		}
		return fmt.Errorf("matrix whoami: %w", err)
	}
	if a.cfg.UserID != "" && who.UserID != id.UserID(a.cfg.UserID) {
		return &gw.PermanentError{Err: fmt.Errorf("the access token belongs to %s, not to platforms.matrix.user_id %s", who.UserID, a.cfg.UserID)}
	}
	if a.cli.UserID != who.UserID || a.cli.DeviceID != who.DeviceID {
		a.cred.Lock()
		a.cli.UserID, a.cli.DeviceID = who.UserID, who.DeviceID
		a.cred.Unlock()
	}
	a.loadDisplayName(cctx)
	return nil
}

// loadDisplayName learns the name people see, to notice "Name: …" in
// group rooms; without it the localpart still works.
func (a *Adapter) loadDisplayName(ctx context.Context) {
	if resp, err := a.cli.GetOwnDisplayName(ctx); err == nil {
		a.displayName.Store(resp.DisplayName)
	}
}

// syncFilter keeps /sync to what the adapter reads: room messages and
// membership, no presence or account data.
const syncFilter = `{"presence":{"types":[]},"account_data":{"types":[]},` +
	`"room":{"timeline":{"limit":100,"types":["m.room.message","m.room.member","m.room.encrypted"]},` +
	`"state":{"types":["m.room.member"],"lazy_load_members":true},` +
	`"ephemeral":{"types":[]},"account_data":{"types":[]}}}`

// sync is the /sync loop.
func (a *Adapter) sync(ctx context.Context, in gw.Inbox) error {
	var (
		batch *batch
		fails int
		wait  = time.Second
	)
	for ctx.Err() == nil {
		if a.relogin.Swap(false) {
			if err := a.newLogin(ctx); err != nil {
				return err
			}
		}
		if batch == nil {
			sctx, cancel := context.WithTimeout(ctx, a.cfg.SyncTimeout+30*time.Second)
			a.syncMu.Lock()
			a.stopSync = cancel
			a.syncMu.Unlock()
			resp, err := a.cli.FullSyncRequest(sctx, mautrix.ReqSync{Timeout: int(a.cfg.SyncTimeout / time.Millisecond),
				Since: a.since, FilterID: syncFilter})
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if a.relogin.Load() {
					continue
				}
				a.connected.Store(false)
				err = classify(err)
				if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken) {
					if a.cfg.Password != "" {
						a.relogin.Store(true)
						continue
					}
					return &gw.PermanentError{Err: fmt.Errorf("matrix refused the access token (%w): check MATRIX_ACCESS_TOKEN", err)}
				}
				// A few failures in a row end Run, so that the status
				// shows the error; Served starts it again.
				if fails++; fails >= 3 {
					return fmt.Errorf("matrix sync: %w", err)
				}
				d := retryDelay(err, wait)
				a.log.Warn().Err(err).Dur("retry_in", d).Msg("sync failed")
				sleep(ctx, d)
				wait = min(wait*2, 30*time.Second)
				continue
			}
			fails, wait = 0, time.Second
			a.connected.Store(true)
			batch = a.collect(resp, a.since == "")
			continue
		}
		if err := a.handle(ctx, batch, in); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Not recorded: the token stays, and what is left of the
			// batch is tried again.
			a.log.Warn().Err(err).Dur("retry_in", wait).Msg("sync batch not accepted yet")
			sleep(ctx, wait)
			wait = min(wait*2, 30*time.Second)
			continue
		}
		wait = time.Second
		a.since = batch.next
		a.saveSince(batch.next)
		batch = nil
		a.readyOnce.Do(func() { close(a.ready) })
	}
	return nil
}

// newLogin replaces a revoked token with a new password login.
func (a *Adapter) newLogin(ctx context.Context) error {
	a.log.Warn().Msg("the access token was revoked: logging in again")
	a.cred.Lock()
	a.cli.AccessToken = ""
	a.cred.Unlock()
	if err := a.login(ctx); err != nil {
		return err
	}
	return nil
}

// tokenRevoked is Send's report of a refused token: with a password, Run
// logs in again (and the send is retried); without, it is permanent.
func (a *Adapter) tokenRevoked(err error) error {
	if a.cfg.Password == "" || !(errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken)) {
		return err
	}
	a.relogin.Store(true)
	a.syncMu.Lock()
	if a.stopSync != nil {
		a.stopSync()
	}
	a.syncMu.Unlock()
	return fmt.Errorf("matrix: the access token was revoked, logging in again: %w", errors.Unwrap(err))
}

// classify maps a homeserver's answer onto the gateway's retry policy.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		return err
	}
	status := 0
	if he.Response != nil {
		status = he.Response.StatusCode
	}
	if he.RespError == nil && status == 0 {
		return err // the network: worth retrying
	}
	if status == http.StatusTooManyRequests || (he.RespError != nil && he.RespError.ErrCode == mautrix.MLimitExceeded.ErrCode) {
		return &gw.RetryAfterError{After: retryAfter(he), Err: err}
	}
	switch {
	case status >= 500:
		return err
	case status == http.StatusRequestTimeout:
		return err
	case status >= 400:
		// Not in the room, no such room, a bad token, a refused
		// event: no retry changes these.
		return &gw.PermanentError{Err: err}
	}
	return err
}

// retryAfter reads how long a 429 asks to wait: retry_after_ms in the
// body (the Matrix spec), else the Retry-After header, else a second.
func retryAfter(he mautrix.HTTPError) time.Duration {
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if he.Response != nil {
		if s := he.Response.Header.Get("Retry-After"); s != "" {
			var n int
			if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n > 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return time.Second
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

// syncState is the file that keeps the sync token.
type syncState struct {
	UserID string `json:"user_id"`
	Since  string `json:"since"`
}

func (a *Adapter) statePath() string {
	if a.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(a.cfg.StateDir, "matrix-sync.json")
}

// loadSince reads the saved token, if it was saved for the same account
// on the same homeserver.
func (a *Adapter) loadSince() string {
	p := a.statePath()
	if p == "" {
		return ""
	}
	b, err := os.ReadFile(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.log.Warn().Err(err).Msg("read the sync token: starting afresh")
		}
		return ""
	}
	var st syncState
	if err := json.Unmarshal(b, &st); err != nil {
		a.log.Warn().Err(err).Msg("the sync token file is damaged: starting afresh")
		return ""
	}
	if st.UserID != a.account() {
		return ""
	}
	return st.Since
}

// account names the account a token belongs to.
func (a *Adapter) account() string { return string(a.cli.UserID) + " " + a.cfg.Homeserver }

// saveSince writes the token atomically; a failure costs only events
// handed over twice after a restart (the router drops repeats).
func (a *Adapter) saveSince(since string) {
	p := a.statePath()
	if p == "" {
		return
	}
	b, _ := json.Marshal(syncState{UserID: a.account(), Since: since})
	err := os.MkdirAll(a.cfg.StateDir, 0o700)
	if err == nil {
		tmp := p + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, p)
		}
	}
	if err != nil {
		a.log.Warn().Err(err).Msg("save the sync token")
	}
}

var _ gw.Platform = (*Adapter)(nil)
var _ gw.Connector = (*Adapter)(nil)
