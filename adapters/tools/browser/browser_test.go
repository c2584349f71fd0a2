package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// chromium is the browser the tests drive: Debian's, from $HERMES_CHROMIUM
// or PATH. Under CI a missing one fails the test; elsewhere it skips.
func chromium(t testing.TB) string {
	t.Helper()
	p, err := FindChromium("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (.ci/run installs Debian's chromium)", err)
		}
		t.Skip(err)
	}
	return p
}

// site serves the pages the tests drive, on loopback.
func site(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", title, body)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Home", `<h1>Home</h1><a href="/form">Go to the form</a> <a href="/click">Go to the click page</a> <a href="/dialog" target="_blank">Dialogs in a new tab</a>`)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Form", `<h1>Sign up</h1><form action="/submitted" method="post">`+
			`<label for="name">Name</label><input id="name" name="name">`+
			`<label><input type="checkbox" name="news" value="yes"> Newsletter</label>`+
			`<button type="submit">Send</button></form>`)
	})
	mux.HandleFunc("/submitted", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		page(w, "Thanks", fmt.Sprintf("<h1>Thanks, %s</h1><p>newsletter: %s</p>", html.EscapeString(r.FormValue("name")), html.EscapeString(r.FormValue("news"))))
	})
	mux.HandleFunc("/click", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Click", `<h1>Counter</h1><p id="out">Nothing yet</p>`+
			`<button onclick="document.getElementById('out').textContent = 'Clicked at last'; const b = document.createElement('button'); b.textContent = 'Appeared'; document.body.appendChild(b); console.log('clicked', 42)">Change it</button>`+
			`<img src="/pic.png" alt="a red dot" width="10" height="10">`+
			`<script>console.warn('page ready'); setTimeout(() => { throw new Error('late failure') }, 0)</script>`)
	})
	mux.HandleFunc("/pic.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(redDot)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Download", `<h1>Files</h1><a href="/report.csv">Get the report</a>`)
	})
	mux.HandleFunc("/report.csv", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
		fmt.Fprint(w, "a,b\n1,2\n")
	})
	mux.HandleFunc("/dialog", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Dialog", `<h1>Questions</h1><p id="out">unanswered</p>`+
			`<button onclick="document.getElementById('out').textContent = confirm('Delete everything?') ? 'confirmed' : 'kept'">Delete</button>`+
			`<button onclick="document.getElementById('out').textContent = 'name: ' + prompt('Your name?', 'anon')">Ask</button>`)
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "<p>Line number %d of the long page</p>", i)
		}
		b.WriteString(`<button>Bottom button</button>`)
		page(w, "Long", b.String())
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// redDot is a 1x1 PNG.
var redDot = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")

// harness is the browser tools as a session sees them.
type harness struct {
	t     testing.TB
	b     *Browsers
	tools map[string]tool.Tool
	env   *tool.Env
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	cfg.Chromium = chromium(t)
	if cfg.DownloadDir == "" {
		cfg.DownloadDir = t.TempDir()
	}
	b := New(cfg)
	h := &harness{t: t, b: b, tools: map[string]tool.Tool{}, env: &tool.Env{SessionID: "s-" + t.Name(), Values: tool.NewSessionValues()}}
	for _, x := range b.Tools() {
		h.tools[x.Spec().Name] = x
	}
	t.Cleanup(func() {
		h.env.Values.Close()
		b.Close()
		noLeaks(t, b)
	})
	return h
}

// noLeaks fails when a browser process b started is still running.
func noLeaks(t testing.TB, b *Browsers) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := marked(b.mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("browser processes left running: %v", left)
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) ctx() context.Context {
	return tool.WithEnv(context.Background(), h.env)
}

// call runs a tool and fails the test on an error.
func (h *harness) call(name string, args any) string {
	h.t.Helper()
	out, err := h.try(name, args)
	if err != nil {
		h.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func (h *harness) try(name string, args any) (string, error) {
	h.t.Helper()
	raw, _ := json.Marshal(args)
	if args == nil {
		raw = []byte("{}")
	}
	x, ok := h.tools[name]
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	ctx, cancel := context.WithTimeout(h.ctx(), 60*time.Second)
	defer cancel()
	return x.Run(ctx, raw)
}

// ref finds the ref a snapshot gives the element with this role and
// name.
func ref(t testing.TB, snap, role, name string) string {
	t.Helper()
	for _, line := range strings.Split(snap, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "- "+role+" \""+name+"\"") {
			if i := strings.Index(l, "[ref="); i >= 0 {
				return "@" + l[i+5:i+5+strings.IndexByte(l[i+5:], ']')]
			}
		}
	}
	t.Fatalf("no %s %q with a ref in the snapshot:\n%s", role, name, snap)
	return ""
}

func mustContain(t testing.TB, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestNavigateSnapshotAndBack(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL})
	mustContain(t, out, "Home", `- heading "Home"`, `- link "Go to the form" [ref=e1]`)
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "link", "Go to the form")})
	mustContain(t, out, "/form — Form", `- heading "Sign up"`, `- textbox "Name"`, `- button "Send"`)
	out = h.call("browser_back", nil)
	mustContain(t, out, "Went back to "+srv.URL, `- heading "Home"`)
	mustContain(t, h.call("browser_back", nil), "Went back to about:blank") // where every browser starts
	if _, err := h.try("browser_back", nil); err == nil || !strings.Contains(err.Error(), "no previous page") {
		t.Fatalf("back past the first page: %v", err)
	}
	out = h.call("browser_navigate", map[string]any{"url": srv.URL})
	// A link that opens a new tab: the session's one tab follows it.
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "link", "Dialogs in a new tab")})
	mustContain(t, out, "opened "+srv.URL+"/dialog in a new tab", "Page: "+srv.URL+"/dialog", `- heading "Questions"`)
	h.call("browser_navigate", map[string]any{"url": srv.URL})
	full := h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, full, "Page: "+srv.URL)
	// A ref from an older snapshot that names nothing now is refused.
	if _, err := h.try("browser_click", map[string]any{"ref": "@e99"}); err == nil || !strings.Contains(err.Error(), "not in the last snapshot") {
		t.Fatalf("unknown ref: %v", err)
	}
}

func TestForm(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	name := ref(t, out, "textbox", "Name")
	out = h.call("browser_type", map[string]any{"ref": name, "text": "wrong"})
	out = h.call("browser_type", map[string]any{"ref": name, "text": "Ada Lovelace"}) // cleared first
	mustContain(t, out, `- textbox "Name" [ref=`, `"Ada Lovelace"`)
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "checkbox", "Newsletter")})
	mustContain(t, out, "[checked=true]")
	h.call("browser_click", map[string]any{"ref": name})
	out = h.call("browser_press", map[string]any{"key": "Enter"})
	mustContain(t, out, "/submitted — Thanks", `- heading "Thanks, Ada Lovelace"`)
	out = h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, out, "newsletter: yes")
	if strings.Contains(out, "wrong") {
		t.Fatalf("typing did not clear the field:\n%s", out)
	}
}

func TestClickChangesPageConsoleImages(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/click"})
	if strings.Contains(out, "Appeared") {
		t.Fatal("the button is there before the click")
	}
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "button", "Change it")})
	mustContain(t, out, `- button "Appeared" [ref=`)
	full := h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, full, "Clicked at last")
	out = h.call("browser_console", map[string]any{"clear": true})
	mustContain(t, out, "[warning] page ready", "late failure", "[log] clicked 42")
	out = h.call("browser_console", map[string]any{"expression": "document.querySelectorAll('button').length"})
	mustContain(t, out, "Result: 2", "Console: no messages.")
	out = h.call("browser_console", map[string]any{"expression": "nope.nope"})
	mustContain(t, out, "threw: ReferenceError: nope is not defined")
	out = h.call("browser_get_images", nil)
	mustContain(t, out, srv.URL+"/pic.png", `"a red dot"`, "1x1")
	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/long"})
	if strings.Contains(out, "Bottom button") != true {
		t.Fatalf("the snapshot is of the whole page, not the viewport:\n%s", out)
	}
	full = h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, full, `- text "Line number 0 of the long page"`, "[… snapshot cut at 15000 characters")
	if len(full) > 16000 {
		t.Fatalf("a full snapshot of %d characters was not cut", len(full))
	}
	out = h.call("browser_scroll", map[string]any{"direction": "down"})
	mustContain(t, out, "Scrolled down (now at ")
	if strings.Contains(out, "now at 0 ") {
		t.Fatalf("scroll did not move:\n%s", out)
	}
}

func TestDownload(t *testing.T) {
	srv := site(t)
	dir := t.TempDir()
	h := newHarness(t, Config{DownloadDir: dir})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/download"})
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "link", "Get the report")})
	saved := filepath.Join(dir, safeName(h.env.SessionID), "report.csv")
	mustContain(t, out, "Downloaded report.csv (8 bytes) from "+srv.URL+"/report.csv to "+saved)
	b, err := os.ReadFile(saved)
	if err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("downloaded file: %q %v", b, err)
	}
	// Opening a file's address downloads it too.
	os.Remove(saved)
	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/report.csv"})
	mustContain(t, out, "did not open as a page", "Downloaded report.csv")
	if _, err := os.Stat(saved); err != nil {
		t.Fatal(err)
	}
}

func TestDialogs(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/dialog"})
	del := ref(t, out, "button", "Delete")
	out = h.call("browser_click", map[string]any{"ref": del})
	mustContain(t, out, `A confirm dialog is open and blocks the page: "Delete everything?"`, "browser_dialog")
	// The page is blocked: other tools say so rather than hang.
	if _, err := h.try("browser_click", map[string]any{"ref": del}); err == nil || !strings.Contains(err.Error(), "confirm dialog is open") {
		t.Fatalf("click while a dialog is open: %v", err)
	}
	out = h.call("browser_snapshot", nil)
	mustContain(t, out, "Delete everything?")
	out = h.call("browser_dialog", map[string]any{"action": "dismiss"})
	mustContain(t, out, `Dismissed the confirm dialog "Delete everything?"`)
	out = h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, out, "kept")

	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "button", "Ask")})
	mustContain(t, out, `A prompt dialog is open`, `"Your name?" (default answer "anon")`)
	out = h.call("browser_dialog", map[string]any{"action": "accept", "prompt_text": "Grace"})
	mustContain(t, out, `answering "Grace"`)
	out = h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, out, "name: Grace")
	if _, err := h.try("browser_dialog", map[string]any{"action": "accept"}); err == nil || !strings.Contains(err.Error(), "no dialog is open") {
		t.Fatalf("dialog with none open: %v", err)
	}
}

func TestVision(t *testing.T) {
	srv := site(t)
	store := blobs.Open(t.TempDir())
	var asked []string
	h := newHarness(t, Config{Screenshots: store, Vision: func(ctx context.Context, ref schema.ImageRef, q string) (string, error) {
		b, err := store.ReadImage(ctx, ref)
		if err != nil {
			return "", err
		}
		if ref.MediaType != "image/png" || len(b) < 1000 {
			return "", fmt.Errorf("not a screenshot: %s, %d bytes", ref.MediaType, len(b))
		}
		if id := tool.EnvFrom(ctx).SessionID; id != "s-TestVision" {
			return "", fmt.Errorf("vision runs outside the tool call's session (%q)", id)
		}
		asked = append(asked, q)
		return "A heading that says Counter.", nil
	}})
	h.call("browser_navigate", map[string]any{"url": srv.URL + "/click"})
	out := h.call("browser_vision", map[string]any{"question": "What does the heading say?", "annotate": true})
	mustContain(t, out, "Screenshot of "+srv.URL+"/click — Click: "+store.Dir(), "A heading that says Counter.")
	if len(asked) != 1 || asked[0] != "What does the heading say?" {
		t.Fatalf("vision asked %q", asked)
	}
	// The labels are gone from the page after the screenshot.
	out = h.call("browser_console", map[string]any{"expression": "document.querySelectorAll('[data-hermes-ref]').length"})
	mustContain(t, out, "Result: 0")

	h2 := newHarness(t, Config{Screenshots: store})
	h2.call("browser_navigate", map[string]any{"url": srv.URL + "/click"})
	out = h2.call("browser_vision", map[string]any{"question": "?"})
	mustContain(t, out, "set auxiliary.vision in config.yaml")
}

func TestRefusals(t *testing.T) {
	h := newHarness(t, Config{})
	for _, u := range []string{"file:///etc/passwd", "chrome://settings", ""} {
		if _, err := h.try("browser_navigate", map[string]any{"url": u}); err == nil {
			t.Fatalf("navigate %q was allowed", u)
		}
	}
	if _, err := h.try("browser_click", map[string]any{"ref": "@e1"}); err == nil || !strings.Contains(err.Error(), "no snapshot yet") {
		t.Fatalf("click before any snapshot: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	if _, err := h.try("browser_navigate", map[string]any{"url": closed}); err == nil || !strings.Contains(err.Error(), "ERR_CONNECTION_REFUSED") {
		t.Fatalf("navigate to a closed port: %v", err)
	}
	if _, err := h.try("browser_press", map[string]any{"key": "NotAKey"}); err == nil {
		t.Fatal("an unknown key was pressed")
	}
}

func TestNoChromium(t *testing.T) {
	t.Setenv(EnvChromium, "")
	t.Setenv("PATH", t.TempDir())
	_, ts, err := Tools(Config{})
	if err == nil || ts != nil {
		t.Fatalf("tools without a Chromium: %v %v", ts, err)
	}
	mustContain(t, err.Error(), "apt-get install chromium", "HERMES_CHROMIUM")
	_, _, err = Tools(Config{Chromium: "/nonexistent/chromium"})
	mustContain(t, err.Error(), "/nonexistent/chromium", "apt-get install chromium")
}

// TestOneBrowserPerSession: two sessions get two browsers (separate
// cookies), browser_close and the session's end close them, a killed
// browser is started again with a note, and none outlives the test.
func TestOneBrowserPerSession(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{})
	h.call("browser_navigate", map[string]any{"url": srv.URL})
	h.call("browser_console", map[string]any{"expression": "document.cookie = 'who=first'"})
	other := &harness{t: t, b: h.b, tools: h.tools, env: &tool.Env{SessionID: "other", Values: tool.NewSessionValues()}}
	other.call("browser_navigate", map[string]any{"url": srv.URL})
	out := other.call("browser_console", map[string]any{"expression": "document.cookie"})
	mustContain(t, out, `Result: ""`)
	if n := h.b.Open(); n != 2 {
		t.Fatalf("%d browsers open, want 2", n)
	}
	// The other session ends: its browser goes with it.
	other.env.Values.Close()
	if n := h.b.Open(); n != 1 {
		t.Fatalf("%d browsers open after a session ended, want 1", n)
	}
	// Kill the browser under the session: the next call starts a new one
	// and says so.
	h.b.mu.Lock()
	var s *session
	for x := range h.b.all {
		s = x
	}
	h.b.mu.Unlock()
	if s.l.pid == 0 {
		t.Fatal("no pid for the browser")
	}
	syscall.Kill(s.l.pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for alive(s.l) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	mustContain(t, out, "had stopped (crashed or killed); a new one was started", `- heading "Sign up"`)
	out = h.call("browser_close", nil)
	mustContain(t, out, "Browser closed.")
	if n := h.b.Open(); n != 0 {
		t.Fatalf("%d browsers open after browser_close", n)
	}
	out = h.call("browser_close", nil)
	mustContain(t, out, "No browser was open.")
	noLeaks(t, h.b)
}

// newEnv is a session's tool environment.
func newEnv(id string) *tool.Env {
	return &tool.Env{SessionID: id, Values: tool.NewSessionValues()}
}

// TestCallsOfOneResponseKeepTheirOrder: a response that types and then
// clicks runs the two one after another, in that order.
func TestCallsOfOneResponseKeepTheirOrder(t *testing.T) {
	b := New(Config{Chromium: "chromium"})
	byName := map[string]tool.Tool{}
	for _, x := range b.Tools() {
		byName[x.Spec().Name] = x
	}
	var calls []tool.Call
	for _, n := range []string{"browser_type", "browser_click", "browser_snapshot", "browser_navigate"} {
		calls = append(calls, tool.Call{Name: n, Tool: byName[n], Args: json.RawMessage(`{}`)})
	}
	waves := tool.Waves(calls, 8)
	if len(waves) != 4 {
		t.Fatalf("waves %v: browser calls of one response run side by side", waves)
	}
	for i, w := range waves {
		if len(w) != 1 || w[0] != i {
			t.Fatalf("waves %v: not in the model's order", waves)
		}
	}
}

// TestEnvironment: an unconfined browser gets the environment Hermes
// hands it (without its keys), not this process's.
func TestEnvironment(t *testing.T) {
	t.Setenv("HERMES_TEST_SECRET_KEY", "sk-must-not-leak")
	h := newHarness(t, Config{Env: func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} }})
	h.call("browser_navigate", map[string]any{"url": "about:blank"})
	procs := marked(h.b.mark)
	if len(procs) == 0 {
		t.Fatal("no browser processes")
	}
	for _, pid := range procs {
		env, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
		if strings.Contains(string(env), "sk-must-not-leak") {
			t.Fatalf("browser process %d has this process's secret in its environment", pid)
		}
	}
}

// TestIdleBrowserCloses: a browser left without a call for Config.Idle is
// closed, and the next call starts a new one and says so.
func TestIdleBrowserCloses(t *testing.T) {
	srv := site(t)
	h := newHarness(t, Config{Idle: time.Second})
	h.call("browser_navigate", map[string]any{"url": srv.URL})
	time.Sleep(300 * time.Millisecond)
	h.call("browser_snapshot", nil) // a call starts the clock again
	time.Sleep(300 * time.Millisecond)
	if n := h.b.Open(); n != 1 {
		t.Fatalf("the browser closed %s after a call, before its idle time", 300*time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.b.Open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.b.Open(); n != 0 {
		t.Fatal("an idle browser was not closed")
	}
	noLeaks(t, h.b)
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	mustContain(t, out, "closed after 1s without use; a new one was started", `- heading "Sign up"`)
}

// TestStartGivenUp: a call that ends while its browser is starting leaves
// no browser behind.
func TestStartGivenUp(t *testing.T) {
	h := newHarness(t, Config{})
	ctx, cancel := context.WithTimeout(h.ctx(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.tools["browser_navigate"].Run(ctx, json.RawMessage(`{"url":"about:blank"}`)); err == nil {
		t.Fatal("a navigation whose call ended during the start succeeded")
	}
	if n := h.b.Open(); n != 0 {
		t.Fatalf("%d browsers open", n)
	}
	noLeaks(t, h.b)
	// The next call starts one.
	mustContain(t, h.call("browser_navigate", map[string]any{"url": "about:blank"}), "Navigated to about:blank")
}
