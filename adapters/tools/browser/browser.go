// Package browser is the browser the agent drives: upstream Hermes's
// browser_* tools (navigate, snapshot, click, type, press, scroll, back,
// get_images, console, vision, dialog, close) over a real headless
// Chromium spoken to through the DevTools protocol (chromedp), one browser
// per session, started on the session's first browser call and ended with
// the session, with browser_close, or when Hermes exits.
//
// Where the terminal runs in a sandbox (package sandbox), the browser runs
// in the same one, the session's: the kernel's walls and the network
// policy hold Chromium as they hold a shell command, and the protocol runs
// over pipes, so nothing listens on a port. Under a filtered or cut
// network the browser gets a sandbox of its own with the session's walls,
// and an allow-list proxy holds its network (launchSandboxed says why).
package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/schema"
)

// Sandboxes gives a session its sandbox (terminal.Sandboxes implements it):
// the browser runs where the session's commands run.
type Sandboxes interface {
	For(ctx context.Context) (*sandbox.Sandbox, error)
	// Environ is the environment a sandboxed command gets out of environ.
	Environ(environ []string) []string
}

// Config is what the browser tools are built from.
type Config struct {
	// Chromium is the browser binary (see FindChromium).
	Chromium string
	// Sandboxes, when set, holds each session's browser in the session's
	// sandbox; nil runs Chromium unconfined (sandbox.mode full-access, or
	// a terminal backend that is not local).
	Sandboxes Sandboxes
	// Screenshots stores browser_vision's screenshots (events/blobs
	// implements it); nil keeps them in DownloadDir's parent.
	Screenshots ImageStore
	// Vision answers a question about a screenshot (auxiliary.vision's
	// model); nil: browser_vision says what to set.
	Vision func(ctx context.Context, ref schema.ImageRef, question string) (string, error)
	// DownloadDir is where an unconfined browser saves downloads, one
	// directory per session beneath it ("": a temporary directory).
	DownloadDir string
	// Env is the environment of an unconfined browser (nil: this
	// process's): Hermes passes its scrubbed one, without its keys. A
	// sandboxed browser gets what Sandboxes.Environ lets through.
	Env func() []string
	// Idle closes a session's browser after this long without a browser
	// call (0: two minutes, upstream's browser.inactivity_timeout, or
	// $BROWSER_INACTIVITY_TIMEOUT seconds; negative: never); the next call
	// starts a new one.
	Idle time.Duration
	// Timeout bounds one browser action (0: 30 seconds).
	Timeout time.Duration
	Log     zerolog.Logger
}

// ImageStore keeps an image and says where its bytes are.
type ImageStore interface {
	PutImage(ctx context.Context, data []byte, name string) (schema.ImageRef, error)
	Path(sum string) string
}

// Browsers owns every session's browser: the tools reach a session's
// through it, and Close ends them all (Hermes exiting).
type Browsers struct {
	cfg Config
	// mark is in the environment of every browser process started here.
	mark string

	mu     sync.Mutex
	all    map[*session]struct{}
	closed bool
}

// New returns the owner of the sessions' browsers; cfg.Chromium must be
// set (FindChromium).
func New(cfg Config) *Browsers {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Idle == 0 {
		cfg.Idle = 2 * time.Minute
		if n, err := strconv.Atoi(os.Getenv("BROWSER_INACTIVITY_TIMEOUT")); err == nil && n > 0 {
			cfg.Idle = time.Duration(n) * time.Second
		}
	}
	var r [8]byte
	rand.Read(r[:])
	return &Browsers{cfg: cfg, all: map[*session]struct{}{}, mark: hex.EncodeToString(r[:])}
}

// Open reports how many browsers are running (tests, status).
func (b *Browsers) Open() int {
	// The sessions are copied first: a session's lock is taken before the
	// owner's (a starting browser), never after.
	b.mu.Lock()
	all := make([]*session, 0, len(b.all))
	for s := range b.all {
		all = append(all, s)
	}
	b.mu.Unlock()
	n := 0
	for _, s := range all {
		s.mu.Lock()
		if s.l != nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// Close ends every session's browser; no new one starts afterwards.
func (b *Browsers) Close() error {
	b.mu.Lock()
	b.closed = true
	all := make([]*session, 0, len(b.all))
	for s := range b.all {
		all = append(all, s)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
	return nil
}

// valuesKey is where a session keeps its browser in tool.SessionValues,
// which closes it when the session ends or is passivated.
const valuesKey = "browser.session"

// sessionOf returns ctx's session's browser state, made on first use.
func (b *Browsers) sessionOf(ctx context.Context) *session {
	env := tool.EnvFrom(ctx)
	return env.Values.Get(valuesKey, func() any { return &session{owner: b, id: env.SessionID} }).(*session)
}

// session is one session's browser: started lazily, restarted after a
// crash, ended by Close.
type session struct {
	owner *Browsers
	id    string

	// mu makes a session's browser calls one at a time.
	mu sync.Mutex
	l  *launched
	// refs maps the last snapshot's refs ("e1") to DOM nodes.
	refs map[string]refNode
	// idle closes the browser when no call came for Config.Idle; gen
	// counts calls, so a timer that fires after a newer call does nothing.
	idle    *time.Timer
	gen     int
	expired bool // the browser was closed for being idle

	ev        sync.Mutex // guards what the event listeners fill
	console   []string
	dialogs   []dialog
	downloads map[string]*download
	order     []string // download GUIDs in the order they began
	loading   bool
	loadDone  chan struct{}     // closed when the main frame stops loading
	stops     int               // how many times the main frame stopped loading
	popups    map[string]string // tabs the page opened (target id → address)
	requested time.Time         // when the page last asked to navigate its main frame
	actStart  time.Time         // when the current call's action began
	actStops  int               // stops when it began
	frameID   string
}

type dialog struct {
	Type, Message, Default string
}

type download struct {
	Name, URL, Path, State string
	Bytes                  float64
	reported               bool
}

// Close ends the session's browser; it implements io.Closer for
// tool.SessionValues.
func (s *session) Close() error {
	s.mu.Lock()
	l := s.l
	s.l = nil
	s.refs = nil
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	s.owner.mu.Lock()
	delete(s.owner.all, s)
	s.owner.mu.Unlock()
	if l != nil {
		l.stop()
	}
	return nil
}

// alive says whether l's browser still answers.
func alive(l *launched) bool {
	select {
	case <-l.lost:
		return false
	case <-l.ctx.Done():
		return false
	default:
		return true
	}
}

// browser returns the session's running browser, starting one when there
// is none; note says, when one had died, that it was started again. The
// caller holds s.mu.
func (s *session) browser(ctx context.Context) (l *launched, note string, err error) {
	if s.l != nil && alive(s.l) {
		return s.l, "", nil
	}
	if s.l == nil && s.expired {
		note = fmt.Sprintf("[The session's browser was closed after %s without use; a new one was started: navigate again.]\n", s.owner.cfg.Idle)
	}
	s.expired = false
	if s.l != nil {
		s.l.stop()
		s.l = nil
		note = "[The session's browser had stopped (crashed or killed); a new one was started: the page and its state are gone, so navigate again.]\n"
		s.owner.cfg.Log.Warn().Str("session", s.id).Msg("browser: the session's Chromium died; starting a new one")
	}
	s.owner.mu.Lock()
	if s.owner.closed {
		s.owner.mu.Unlock()
		return nil, "", errors.New("hermes is shutting down; no new browser")
	}
	s.owner.all[s] = struct{}{}
	s.owner.mu.Unlock()
	cfg := s.owner.cfg
	if cfg.Sandboxes != nil {
		sb, serr := cfg.Sandboxes.For(ctx)
		if serr != nil {
			return nil, "", fmt.Errorf("the browser runs in the session's sandbox, which did not start: %w", serr)
		}
		l, err = launchSandboxed(ctx, sb, cfg.Sandboxes.Environ(os.Environ()), cfg.Chromium, s.owner.mark, cfg.Log)
	} else {
		dir := cfg.DownloadDir
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "hermes-browser-downloads")
		}
		var env []string
		if cfg.Env != nil {
			env = cfg.Env()
		}
		l, err = launchDirect(ctx, cfg.Chromium, filepath.Join(dir, safeName(s.id)), s.owner.mark, env)
	}
	if err != nil {
		return nil, "", err
	}
	s.ev.Lock()
	s.console, s.dialogs, s.downloads, s.order, s.loading = nil, nil, map[string]*download{}, nil, false
	s.popups = map[string]string{}
	s.ev.Unlock()
	if err := s.listen(l); err != nil {
		l.stop()
		return nil, "", err
	}
	s.l, s.refs = l, nil
	return l, note, nil
}

// touch starts the idle clock again after a call; the caller holds s.mu.
func (s *session) touch() {
	d := s.owner.cfg.Idle
	if d < 0 || s.l == nil {
		return
	}
	s.gen++
	gen := s.gen
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.gen != gen || s.l == nil {
			s.mu.Unlock()
			return
		}
		l := s.l
		s.l, s.refs, s.expired = nil, nil, true
		s.mu.Unlock()
		s.owner.cfg.Log.Info().Str("session", s.id).Dur("idle", d).Msg("browser: closed for being idle")
		l.stop()
	})
}

// safeName makes a session id a directory name.
func safeName(id string) string {
	if id == "" {
		return "default"
	}
	if id == "." || id == ".." {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, id)
}

// listen records what the page says and does between calls: console
// lines and exceptions, dialogs, downloads and whether the main frame is
// loading.
func (s *session) listen(l *launched) error {
	if err := chromedp.Listen(l.ctx, func(ev any) {
		s.ev.Lock()
		defer s.ev.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, remoteText(a))
			}
			s.addConsole(fmt.Sprintf("[%s] %s", e.Type, strings.Join(parts, " ")))
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text = d.Exception.Description
			}
			s.addConsole("[exception] " + text)
		case *page.EventJavascriptDialogOpening:
			s.dialogs = append(s.dialogs, dialog{Type: string(e.Type), Message: e.Message, Default: e.DefaultPrompt})
		case *page.EventJavascriptDialogClosed:
			if len(s.dialogs) > 0 {
				s.dialogs = s.dialogs[1:]
			}
		case *target.EventTargetCreated, *target.EventTargetInfoChanged:
			s.notePopup(e)
		case *page.EventFrameRequestedNavigation:
			if (s.frameID == "" || string(e.FrameID) == s.frameID) && e.Disposition == page.ClientNavigationDispositionCurrentTab {
				s.requested = time.Now()
			}
		case *page.EventFrameStartedLoading:
			if s.frameID == "" || string(e.FrameID) == s.frameID {
				if !s.loading {
					s.loading, s.loadDone = true, make(chan struct{})
				}
			}
		case *page.EventFrameStoppedLoading:
			if (s.frameID == "" || string(e.FrameID) == s.frameID) && s.loading {
				s.loading = false
				s.stops++
				close(s.loadDone)
			}
		}
	}); err != nil {
		return err
	}
	if t := chromedp.FromContext(l.ctx).Target; t != nil {
		s.frameID = string(t.TargetID) // a tab's main frame has the target's id
	}
	if err := chromedp.ListenBrowser(l.ctx, func(ev any) {
		s.ev.Lock()
		defer s.ev.Unlock()
		switch e := ev.(type) {
		case *target.EventTargetCreated, *target.EventTargetInfoChanged:
			s.notePopup(e)
		case *browser.EventDownloadWillBegin:
			s.downloads[e.GUID] = &download{Name: e.SuggestedFilename, URL: e.URL, State: "in progress"}
			s.order = append(s.order, e.GUID)
		case *browser.EventDownloadProgress:
			if d := s.downloads[e.GUID]; d != nil {
				d.State, d.Bytes = string(e.State), e.ReceivedBytes
			}
		}
	}); err != nil {
		return err
	}
	events := true
	_, err := chromedp.CallBrowser(l.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: l.downloads, EventsEnabled: &events})
	return err
}

// notePopup records a tab the page opened (a link with target=_blank,
// window.open). The caller holds s.ev.
func (s *session) notePopup(ev any) {
	var info *target.Info
	switch e := ev.(type) {
	case *target.EventTargetCreated:
		info = e.TargetInfo
	case *target.EventTargetInfoChanged:
		info = e.TargetInfo
		if _, ok := s.popups[string(info.TargetID)]; !ok {
			return
		}
	}
	if info == nil || info.Type != "page" || s.frameID == "" || string(info.OpenerID) != s.frameID {
		return
	}
	s.popups[string(info.TargetID)] = info.URL
}

// adoptPopup brings a tab the page just opened into the session's one:
// the model drives one tab, so the new tab is closed and its address
// opened here. It says what it did ("" when no tab was opened).
func (s *session) adoptPopup(ctx context.Context) string {
	s.ev.Lock()
	n := len(s.popups)
	s.ev.Unlock()
	if n == 0 {
		return ""
	}
	// The new tab's address comes a moment after the tab.
	var id, addr string
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.ev.Lock()
		for k, v := range s.popups {
			id, addr = k, v
		}
		s.ev.Unlock()
		if (addr != "" && addr != "about:blank") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.ev.Lock()
	clear(s.popups)
	s.ev.Unlock()
	chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: target.ID(id)})
	if addr == "" || addr == "about:blank" {
		return "The page opened an empty new tab; it was closed."
	}
	loads := s.loads()
	res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: addr})
	if err != nil || res.ErrorText != "" {
		return fmt.Sprintf("The page opened %s in a new tab, which did not load here: %v %s", addr, err, res.ErrorText)
	}
	s.waitLoaded(ctx, loads)
	s.refs = nil
	return fmt.Sprintf("The page opened %s in a new tab; this tab shows it now (the browser keeps one tab).", addr)
}

// maxConsole bounds the console lines kept per session.
const maxConsole = 500

func (s *session) addConsole(line string) {
	if len(line) > 2000 {
		line = line[:2000] + "…"
	}
	s.console = append(s.console, line)
	if len(s.console) > maxConsole {
		s.console = s.console[len(s.console)-maxConsole:]
	}
}

// remoteText is a console argument as text.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		v := string(o.Value)
		if strings.HasPrefix(v, `"`) {
			var str string
			if err := jsonUnmarshal(o.Value, &str); err == nil {
				return str
			}
		}
		return v
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

// settle waits, after an action, for a load it started to finish: a
// moment for a navigation to begin, then until the main frame stops
// loading (at most the action timeout).
func (s *session) settle(ctx context.Context) {
	select {
	case <-time.After(150 * time.Millisecond):
	case <-ctx.Done():
		return
	}
	s.ev.Lock()
	// Asked to navigate, and no load has finished since the action began.
	loading, done, asked := s.loading, s.loadDone, s.requested.After(s.actStart) && s.stops == s.actStops
	s.ev.Unlock()
	if !loading && asked {
		// The page asked to navigate but the load has not begun yet (a
		// busy machine): give it a few seconds to begin.
		deadline := time.Now().Add(5 * time.Second)
		for !loading && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			s.ev.Lock()
			loading, done = s.loading, s.loadDone
			s.ev.Unlock()
		}
	}
	if !loading {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// loads is how many loads of the main frame have finished so far.
func (s *session) loads() int {
	s.ev.Lock()
	defer s.ev.Unlock()
	return s.stops
}

// waitLoaded waits until more than n loads of the main frame have
// finished (a navigation this call started), at most until ctx ends.
func (s *session) waitLoaded(ctx context.Context, n int) {
	for {
		s.ev.Lock()
		done, loading, ch := s.stops > n, s.loading, s.loadDone
		s.ev.Unlock()
		if done {
			return
		}
		if !loading {
			// Not started yet (its event is on the way): look again soon.
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// news is what happened on the page since the last report that the
// model should know: dialogs waiting and downloads begun or finished.
func (s *session) news(l *launched) string {
	s.ev.Lock()
	defer s.ev.Unlock()
	var b strings.Builder
	for _, d := range s.dialogs {
		fmt.Fprintf(&b, "A %s dialog is open and blocks the page: %q", d.Type, d.Message)
		if d.Type == "prompt" {
			fmt.Fprintf(&b, " (default answer %q)", d.Default)
		}
		b.WriteString(" — answer it with browser_dialog (accept or dismiss).\n")
	}
	for _, g := range s.order {
		d := s.downloads[g]
		if d.reported {
			continue
		}
		switch d.State {
		case "completed":
			d.reported = true
			fmt.Fprintf(&b, "Downloaded %s (%.0f bytes) from %s to %s\n", d.Name, d.Bytes, d.URL, l.where(d.Name))
		case "canceled":
			d.reported = true
			fmt.Fprintf(&b, "The download of %s from %s was cancelled.\n", d.Name, d.URL)
		default:
			fmt.Fprintf(&b, "Downloading %s from %s (%.0f bytes so far) to %s\n", d.Name, d.URL, d.Bytes, l.where(d.Name))
		}
	}
	return b.String()
}

// where names a downloaded file as the model's tools see it: the
// terminal's path, and the file tools' where they differ (a sandboxed
// browser saves into the session's /tmp).
func (l *launched) where(name string) string {
	in, out := filepath.Join(l.downloads, name), filepath.Join(l.shown, name)
	if in == out {
		return in
	}
	return fmt.Sprintf("%s (in the terminal; %s for the file tools)", in, out)
}

// waitDownloads gives downloads that began during an action a moment to
// finish, so that a click on a small file reports it saved.
func (s *session) waitDownloads(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.ev.Lock()
		pending := false
		for _, d := range s.downloads {
			if !d.reported && d.State != "completed" && d.State != "canceled" {
				pending = true
			}
		}
		s.ev.Unlock()
		if !pending {
			return
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// waitBegin waits up to d for a download beyond the first n to begin.
func (s *session) waitBegin(ctx context.Context, n int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.ev.Lock()
		began := len(s.order) > n
		s.ev.Unlock()
		if began {
			return
		}
		select {
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// dialogOpen says whether a dialog blocks the page.
func (s *session) dialogOpen() bool {
	s.ev.Lock()
	defer s.ev.Unlock()
	return len(s.dialogs) > 0
}
