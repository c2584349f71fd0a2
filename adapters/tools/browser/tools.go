package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Toolset is the toolset the browser tools are registered under.
const Toolset = "browser"

// Tools returns the browser tools over b. browser_navigate closes every
// session's browser when the registry closes (Hermes exiting).
func (b *Browsers) Tools() []tool.Tool {
	return []tool.Tool{
		&navigateTool{b}, b.tool("browser_snapshot", snapshotSpec, true, b.runSnapshot),
		b.tool("browser_click", clickSpec, false, b.runClick), b.tool("browser_type", typeSpec, false, b.runType),
		b.tool("browser_scroll", scrollSpec, false, b.runScroll), b.tool("browser_back", backSpec, false, b.runBack),
		b.tool("browser_press", pressSpec, false, b.runPress), b.tool("browser_get_images", imagesSpec, true, b.runImages),
		b.tool("browser_vision", visionSpec, true, b.runVision), b.tool("browser_console", consoleSpec, false, b.runConsole),
		b.tool("browser_dialog", dialogSpec, false, b.runDialog), b.tool("browser_close", closeSpec, false, b.runClose),
	}
}

// Tools returns the browser tools, or nil and the reason when no Chromium
// can be found (the tools are then not offered; HowToEnable says what to
// install).
func Tools(cfg Config) (*Browsers, []tool.Tool, error) {
	path, err := FindChromium(cfg.Chromium)
	if err != nil {
		return nil, nil, err
	}
	cfg.Chromium = path
	b := New(cfg)
	return b, b.Tools(), nil
}

type runFunc func(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error)

// simpleTool is one browser tool: its spec and the work it does on the
// session's browser.
type simpleTool struct {
	b        *Browsers
	spec     model.ToolSpec
	readOnly bool
	run      runFunc
}

func (b *Browsers) tool(name string, spec model.ToolSpec, readOnly bool, run runFunc) tool.Tool {
	spec.Name = name
	return &simpleTool{b: b, spec: spec, readOnly: readOnly, run: run}
}

func (t *simpleTool) Spec() model.ToolSpec { return t.spec }

// Flags: every browser call writes the one page of the session, so the
// calls of one response run one after another in the order the model gave
// them (type, then click), never side by side in an order the session's
// lock would pick.
func (t *simpleTool) Flags() tool.Flags { return pageFlags }

// pageFlags marks a call as writing the session's page (see simpleTool.Flags).
var pageFlags = tool.Flags{WritesPaths: func(json.RawMessage) []string { return []string{pagePath} }}

// pagePath names the session's page among the paths calls write; it is no
// file's path.
const pagePath = "browser:page"

func (t *simpleTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.b.call(ctx, t.spec.Name, args, t.run)
}

// navigateTool is browser_navigate; it also closes every browser when
// the registry closes.
type navigateTool struct{ b *Browsers }

func (t *navigateTool) Spec() model.ToolSpec {
	s := navigateSpec
	s.Name = "browser_navigate"
	return s
}
func (t *navigateTool) Flags() tool.Flags { return pageFlags }
func (t *navigateTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.b.call(ctx, "browser_navigate", args, t.b.runNavigate)
}

// Close ends every session's browser (io.Closer for the registry).
func (t *navigateTool) Close() error { return t.b.Close() }

// call runs one tool call on the session's browser: one call at a time
// per session, the browser started (or started again after a crash) as
// needed, the work bounded by the action timeout and by ctx.
func (b *Browsers) call(ctx context.Context, name string, args json.RawMessage, run runFunc) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	s := b.sessionOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.touch()
	if name == "browser_close" {
		return b.runClose(ctx, s, nil, args)
	}
	l, note, err := s.browser(ctx)
	if err != nil {
		return "", err
	}
	actx, cancel := context.WithTimeout(l.ctx, b.cfg.Timeout)
	defer cancel()
	actx = context.WithValue(actx, callKey{}, ctx)
	s.ev.Lock()
	s.actStart, s.actStops = time.Now(), s.stops
	s.ev.Unlock()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	out, err := run(actx, s, l, args)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if !alive(l) {
			return "", fmt.Errorf("%s: the browser stopped during the call (crashed or killed); the next browser call starts a new one: %w", name, err)
		}
		if errors.Is(err, context.DeadlineExceeded) && actx.Err() != nil {
			return "", fmt.Errorf("%s: the page did not answer within %s", name, b.cfg.Timeout)
		}
		return "", err
	}
	return note + out, nil
}

// callKey holds, in an action's context (the browser's), the tool
// call's own: work that is not the browser's (the vision model) runs
// under it, with the session's Env and the call's cancellation.
type callKey struct{}

// callCtx is the tool call's context of an action's.
func callCtx(ctx context.Context) context.Context {
	if c, ok := ctx.Value(callKey{}).(context.Context); ok {
		return c
	}
	return ctx
}

// blocked refuses work on a page a dialog holds.
func (s *session) blocked(l *launched) error {
	if s.dialogOpen() {
		return errors.New(strings.TrimSpace(s.news(l)))
	}
	return nil
}

// pageLine is the current page's address and title.
func pageLine(ctx context.Context) string {
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if title == "" {
		return loc
	}
	return fmt.Sprintf("%s — %s", loc, title)
}

// view is what a call that changed the page returns: where it is, what
// happened beside it, and the compact snapshot.
func (s *session) view(ctx context.Context, l *launched, head string) (string, error) {
	news := s.news(l)
	if s.dialogOpen() {
		return head + "\n" + news, nil
	}
	snap, refs, err := snapshot(ctx, false)
	if err != nil {
		return "", err
	}
	s.refs = refs
	return fmt.Sprintf("%s\nPage: %s\n%s\n%s", head, pageLine(ctx), news, snap), nil
}

func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// normalURL adds https:// to a bare host and refuses schemes that read
// local things (file:, chrome:): the file tools are for files.
func normalURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("url is empty")
	}
	if !strings.Contains(raw, "://") && !strings.HasPrefix(raw, "about:") && !strings.HasPrefix(raw, "data:") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url %q: %v", raw, err)
	}
	switch u.Scheme {
	case "http", "https", "about", "data":
		return raw, nil
	}
	return "", fmt.Errorf("url %q: only http, https, data and about: addresses open in the browser (read local files with read_file)", raw)
}

func (b *Browsers) runNavigate(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	u, err := normalURL(a.URL)
	if err != nil {
		return "", err
	}
	if s.dialogOpen() {
		// A new page ends the old one's dialog.
		chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	}
	s.refs = nil
	s.ev.Lock()
	began := len(s.order)
	s.ev.Unlock()
	loads := s.loads()
	res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		return "", fmt.Errorf("navigate to %s: %w", u, err)
	}
	if res.ErrorText != "" {
		// A download is a navigation the browser aborts; its events
		// follow the answer.
		s.waitBegin(ctx, began, 2*time.Second)
		s.waitDownloads(ctx)
		if news := s.news(l); news != "" {
			return fmt.Sprintf("%s did not open as a page (%s).\n%s", u, res.ErrorText, news), nil
		}
		return "", fmt.Errorf("navigate to %s: %s", u, res.ErrorText)
	}
	if res.LoaderID == "" {
		// A move within the page (a #fragment): nothing loads.
		s.settle(ctx)
	} else {
		s.waitLoaded(ctx, loads)
	}
	return s.view(ctx, l, "Navigated to "+u)
}

func (b *Browsers) runSnapshot(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Full bool `json:"full"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if s.dialogOpen() {
		return s.news(l), nil
	}
	snap, refs, err := snapshot(ctx, a.Full)
	if err != nil {
		return "", err
	}
	s.refs = refs
	return fmt.Sprintf("Page: %s\n%s\n%s", pageLine(ctx), s.news(l), snap), nil
}

// node finds a ref of the last snapshot.
func (s *session) node(ref string) (refNode, error) {
	r := strings.TrimPrefix(strings.TrimPrefix(strings.Trim(strings.TrimSpace(ref), "[]"), "ref="), "@")
	if s.refs == nil {
		return refNode{}, errors.New("no snapshot yet: call browser_snapshot (or browser_navigate) and use a ref it shows")
	}
	n, ok := s.refs[r]
	if !ok {
		return refNode{}, fmt.Errorf("ref %q is not in the last snapshot: take a new browser_snapshot and use a ref it shows", ref)
	}
	return n, nil
}

// centre scrolls a node into view and returns the middle of its box.
func centre(ctx context.Context, id cdp.BackendNodeID) (float64, float64, error) {
	chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id})
	q, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
	if err != nil {
		return 0, 0, err
	}
	if len(q.Quads) == 0 || len(q.Quads[0]) < 8 {
		return 0, 0, errors.New("the element has no box on the page (hidden?)")
	}
	var x, y float64
	for i := 0; i < 8; i += 2 {
		x += q.Quads[0][i] / 4
		y += q.Quads[0][i+1] / 4
	}
	return x, y, nil
}

// gone says a ref's element left the page.
func gone(ref string, err error) error {
	return fmt.Errorf("ref %s: the element is not on the page any more (%v): take a new browser_snapshot", ref, err)
}

// whileWatching runs act and returns when it finishes or when a dialog
// opens (a dialog blocks the action that opened it until it is answered).
func (s *session) whileWatching(ctx context.Context, act func() error) error {
	done := make(chan error, 1)
	go func() { done <- act() }()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if s.dialogOpen() {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *Browsers) runClick(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Ref string `json:"ref"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if err := s.blocked(l); err != nil {
		return "", err
	}
	n, err := s.node(a.Ref)
	if err != nil {
		return "", err
	}
	x, y, err := centre(ctx, n.id)
	if err != nil {
		return "", gone(a.Ref, err)
	}
	err = s.whileWatching(ctx, func() error {
		for _, t := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved, input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
			p := input.DispatchMouseEventParams{Type: t, X: x, Y: y}
			if t != input.DispatchMouseEventTypeMouseMoved {
				p.Button, p.Buttons, p.ClickCount = input.MouseButtonLeft, 1, 1
			}
			if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("click %s: %w", a.Ref, err)
	}
	s.settle(ctx)
	s.waitDownloads(ctx)
	head := fmt.Sprintf("Clicked %s %s %s", a.Ref, n.role, quote(n.name))
	if p := s.adoptPopup(ctx); p != "" {
		head += "\n" + p
	}
	return s.view(ctx, l, head)
}

func (b *Browsers) runType(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Ref  string `json:"ref"`
		Text string `json:"text"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if err := s.blocked(l); err != nil {
		return "", err
	}
	n, err := s.node(a.Ref)
	if err != nil {
		return "", err
	}
	chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.id})
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.id})
	if err != nil || obj.Object == nil {
		return "", gone(a.Ref, err)
	}
	// Clear the field as a person selecting its text and deleting would,
	// with the events a page listens for.
	const clear = `function() { this.focus(); if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); } else if (this.isContentEditable) { this.textContent = ''; } }`
	if _, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: clear, ObjectID: obj.Object.ObjectID}); err != nil {
		return "", fmt.Errorf("type into %s: %w", a.Ref, err)
	}
	chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.Object.ObjectID})
	if err := s.whileWatching(ctx, func() error {
		_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: a.Text})
		return err
	}); err != nil {
		return "", fmt.Errorf("type into %s: %w", a.Ref, err)
	}
	s.settle(ctx)
	return s.view(ctx, l, fmt.Sprintf("Typed %q into %s %s %s", a.Text, a.Ref, n.role, quote(n.name)))
}

// keyNames maps the key names a model writes ("Enter", "ArrowDown") to
// the keys chromedp types.
var keyNames = func() map[string]string {
	m := map[string]string{}
	for r, k := range kb.Keys {
		if k.Key != "" {
			if _, dup := m[strings.ToLower(k.Key)]; !dup || len(k.Key) > 1 {
				m[strings.ToLower(k.Key)] = string(r)
			}
		}
	}
	m["esc"], m["return"], m["space"] = kb.Escape, kb.Enter, " "
	m["up"], m["down"], m["left"], m["right"] = kb.ArrowUp, kb.ArrowDown, kb.ArrowLeft, kb.ArrowRight
	return m
}()

func (b *Browsers) runPress(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if err := s.blocked(l); err != nil {
		return "", err
	}
	k, ok := keyNames[strings.ToLower(strings.TrimSpace(a.Key))]
	if !ok {
		if len([]rune(a.Key)) != 1 {
			return "", fmt.Errorf("key %q: name one key (Enter, Tab, Escape, ArrowDown, Backspace, a letter…)", a.Key)
		}
		k = a.Key
	}
	if err := s.whileWatching(ctx, func() error { return chromedp.Do(ctx, chromedp.KeyEvent(k)) }); err != nil {
		return "", fmt.Errorf("press %s: %w", a.Key, err)
	}
	s.settle(ctx)
	s.waitDownloads(ctx)
	head := "Pressed " + a.Key
	if p := s.adoptPopup(ctx); p != "" {
		head += "\n" + p
	}
	return s.view(ctx, l, head)
}

func (b *Browsers) runScroll(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Direction string `json:"direction"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if err := s.blocked(l); err != nil {
		return "", err
	}
	sign := ""
	switch a.Direction {
	case "down", "":
	case "up":
		sign = "-"
	default:
		return "", fmt.Errorf("direction %q: use up or down", a.Direction)
	}
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { window.scrollBy(0, `+sign+`Math.round(window.innerHeight * 0.8)); `+
		`const e = document.scrollingElement || document.documentElement; return [window.scrollY, e.scrollHeight, window.innerHeight]; })()`))
	if err != nil {
		return "", fmt.Errorf("scroll: %w", err)
	}
	s.settle(ctx)
	head := "Scrolled " + a.Direction
	if len(pos) == 3 {
		head += fmt.Sprintf(" (now at %.0f of %.0f pixels, %.0f visible)", pos[0], pos[1], pos[2])
	}
	return s.view(ctx, l, head)
}

func (b *Browsers) runBack(ctx context.Context, s *session, l *launched, _ json.RawMessage) (string, error) {
	if s.dialogOpen() {
		chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	}
	h, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return "", fmt.Errorf("back: %w", err)
	}
	if h.CurrentIndex <= 0 || int(h.CurrentIndex) >= len(h.Entries) {
		return "", errors.New("back: there is no previous page in this browser's history")
	}
	prev := h.Entries[h.CurrentIndex-1]
	if _, err := chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: prev.ID}); err != nil {
		return "", fmt.Errorf("back: %w", err)
	}
	s.refs = nil
	s.settle(ctx)
	return s.view(ctx, l, "Went back to "+prev.URL)
}

func (b *Browsers) runImages(ctx context.Context, s *session, l *launched, _ json.RawMessage) (string, error) {
	if err := s.blocked(l); err != nil {
		return "", err
	}
	type img struct {
		Src    string  `json:"src"`
		Alt    string  `json:"alt"`
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
	}
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]img](`Array.from(document.images).filter(i => i.currentSrc || i.src).slice(0, 200).map(i => ({src: i.currentSrc || i.src, alt: i.alt || '', width: i.naturalWidth, height: i.naturalHeight}))`))
	if err != nil {
		return "", fmt.Errorf("get images: %w", err)
	}
	if len(imgs) == 0 {
		return "No images on " + pageLine(ctx), nil
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d images on %s\n", len(imgs), pageLine(ctx))
	for i, m := range imgs {
		src := m.Src
		if strings.HasPrefix(src, "data:") && len(src) > 80 {
			src = src[:80] + "…"
		}
		fmt.Fprintf(&out, "%d. %s (alt %s, %.0fx%.0f)\n", i+1, src, quote(m.Alt), m.Width, m.Height)
	}
	return out.String(), nil
}

func (b *Browsers) runConsole(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Clear      bool   `json:"clear"`
		Expression string `json:"expression"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	var out strings.Builder
	if strings.TrimSpace(a.Expression) != "" {
		if err := s.blocked(l); err != nil {
			return "", err
		}
		yes := true
		r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: a.Expression, ReturnByValue: &yes, AwaitPromise: &yes})
		if err != nil {
			return "", fmt.Errorf("evaluate: %w", err)
		}
		if r.ExceptionDetails != nil {
			text := r.ExceptionDetails.Text
			if r.ExceptionDetails.Exception != nil && r.ExceptionDetails.Exception.Description != "" {
				text = r.ExceptionDetails.Exception.Description
			}
			fmt.Fprintf(&out, "The expression threw: %s\n", text)
		} else {
			v := remoteText(r.Result)
			if r.Result != nil && len(r.Result.Value) > 0 {
				v = string(r.Result.Value)
			}
			if len(v) > 20000 {
				v = v[:20000] + "…"
			}
			fmt.Fprintf(&out, "Result: %s\n", v)
		}
		s.settle(ctx)
	}
	s.ev.Lock()
	lines := append([]string(nil), s.console...)
	if a.Clear {
		s.console = nil
	}
	s.ev.Unlock()
	if len(lines) == 0 {
		out.WriteString("Console: no messages.\n")
	} else {
		fmt.Fprintf(&out, "Console (%d messages, oldest first):\n%s\n", len(lines), strings.Join(lines, "\n"))
	}
	out.WriteString(s.news(l))
	return out.String(), nil
}

func (b *Browsers) runDialog(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Action     string `json:"action"`
		PromptText string `json:"prompt_text"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Action != "accept" && a.Action != "dismiss" {
		return "", fmt.Errorf("action %q: use accept or dismiss", a.Action)
	}
	s.ev.Lock()
	var d dialog
	open := len(s.dialogs) > 0
	if open {
		d = s.dialogs[0]
	}
	s.ev.Unlock()
	if !open {
		return "", errors.New("no dialog is open on the page")
	}
	if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: a.Action == "accept", PromptText: a.PromptText}); err != nil {
		return "", fmt.Errorf("answer the dialog: %w", err)
	}
	// The closed event takes the dialog off the list; wait for it so the
	// page is free before the snapshot.
	for i := 0; i < 100 && s.dialogOpen(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	s.settle(ctx)
	head := fmt.Sprintf("%s the %s dialog %s", map[string]string{"accept": "Accepted", "dismiss": "Dismissed"}[a.Action], d.Type, quote(d.Message))
	if a.Action == "accept" && d.Type == "prompt" {
		head += fmt.Sprintf(" answering %q", a.PromptText)
	}
	return s.view(ctx, l, head)
}

func (b *Browsers) runClose(_ context.Context, s *session, _ *launched, _ json.RawMessage) (string, error) {
	l := s.l
	s.l, s.refs = nil, nil
	if l == nil {
		return "No browser was open.", nil
	}
	l.stop()
	return "Browser closed.", nil
}

func (b *Browsers) runVision(ctx context.Context, s *session, l *launched, args json.RawMessage) (string, error) {
	var a struct {
		Question string `json:"question"`
		Annotate bool   `json:"annotate"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if err := s.blocked(l); err != nil {
		return "", err
	}
	if a.Annotate {
		if err := s.annotate(ctx); err != nil {
			return "", err
		}
		defer chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('[data-hermes-ref]').forEach(e => e.remove())`))
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return "", fmt.Errorf("screenshot: %w", err)
	}
	var where string
	store := b.cfg.Screenshots
	var refText string
	if store != nil {
		ref, err := store.PutImage(ctx, png, "browser-screenshot.png")
		if err != nil {
			return "", fmt.Errorf("keep the screenshot: %w", err)
		}
		where = store.Path(ref.SHA256)
		refText = fmt.Sprintf("Screenshot of %s: %s (%d bytes, sha256 %s)\n", pageLine(ctx), where, ref.Size, ref.SHA256)
		if b.cfg.Vision != nil {
			q := strings.TrimSpace(a.Question)
			if q == "" {
				q = "Describe what the page shows."
			}
			answer, err := b.cfg.Vision(callCtx(ctx), ref, q)
			if err != nil {
				return refText + "Looking at it failed: " + err.Error(), nil
			}
			return refText + "\n" + answer, nil
		}
	} else {
		dir := filepath.Dir(l.shown)
		where = filepath.Join(dir, fmt.Sprintf("screenshot-%d.png", time.Now().UnixNano()))
		if err := os.WriteFile(where, png, 0o600); err != nil {
			return "", err
		}
		refText = fmt.Sprintf("Screenshot of %s: %s (%d bytes)\n", pageLine(ctx), where, len(png))
	}
	return refText + "No vision model is configured to look at it: set auxiliary.vision in config.yaml to a model that takes images. " +
		"browser_snapshot reads the page as text meanwhile.", nil
}

// annotate labels the last snapshot's elements [eN] on the page, for a
// screenshot that shows which ref is where.
func (s *session) annotate(ctx context.Context) error {
	if s.refs == nil {
		_, refs, err := snapshot(ctx, false)
		if err != nil {
			return err
		}
		s.refs = refs
	}
	const label = `function(ref) { const r = this.getBoundingClientRect(); const d = document.createElement('div'); d.setAttribute('data-hermes-ref', ref); ` +
		`d.textContent = '[' + ref + ']'; d.style.cssText = 'position:fixed;z-index:2147483647;background:#ff0;color:#000;font:bold 11px monospace;padding:0 2px;border:1px solid #000;pointer-events:none;' + ` +
		`'left:' + Math.max(0, r.left) + 'px;top:' + Math.max(0, r.top - 14) + 'px'; document.documentElement.appendChild(d); }`
	for ref, n := range s.refs {
		obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.id})
		if err != nil || obj.Object == nil {
			continue
		}
		arg, _ := json.Marshal(ref)
		chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: label, ObjectID: obj.Object.ObjectID,
			Arguments: []*runtime.CallArgument{{Value: arg}}})
		chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.Object.ObjectID})
	}
	return nil
}
