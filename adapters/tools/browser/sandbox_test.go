package browser

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// sandboxes is the terminal's sandboxes (the real ones) under policy p,
// or a failure under CI where this kernel cannot hold one.
func sandboxes(t testing.TB, p sandbox.Policy) *terminal.Sandboxes {
	t.Helper()
	if pr := sandbox.Probe(); !pr.Enforced() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot run here: %v", pr.Refusal())
		}
		t.Skip(pr.Refusal())
	}
	s := &terminal.Sandboxes{Policy: p, Log: zerolog.Nop(), Idle: -1}
	t.Cleanup(func() { s.Close() })
	return s
}

// nsOf is the namespace of kind a process is in.
func nsOf(t *testing.T, pid int, kind string) string {
	t.Helper()
	l, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", kind))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSandboxedBrowser: with the terminal's sandbox on, the whole browser
// (every one of its processes) runs inside the session's sandbox, and it
// still drives pages: a form, a download into the session's /tmp (where
// the terminal finds it), a dialog.
func TestSandboxedBrowser(t *testing.T) {
	srv := site(t)
	home := t.TempDir()
	p := sandbox.Defaults(home, filepath.Join(home, ".hermes"))
	sbs := sandboxes(t, p)
	h := newHarness(t, Config{Sandboxes: sbs})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	out = h.call("browser_type", map[string]any{"ref": ref(t, out, "textbox", "Name"), "text": "Boxed"})
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "button", "Send")})
	mustContain(t, out, `- heading "Thanks, Boxed"`)

	procs := marked(h.b.mark)
	if len(procs) < 2 {
		t.Fatalf("browser processes: %v", procs)
	}
	mine := nsOf(t, os.Getpid(), "pid")
	for _, pid := range procs {
		if nsOf(t, pid, "pid") == mine || nsOf(t, pid, "mnt") == nsOf(t, os.Getpid(), "mnt") {
			t.Fatalf("browser process %d runs outside the sandbox's namespaces", pid)
		}
	}

	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/download"})
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "link", "Get the report")})
	sb, err := sbs.For(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	saved := filepath.Join(sb.TmpDir(), "downloads", "report.csv")
	if !strings.Contains(out, "Downloaded report.csv") {
		// On a loaded machine the download may begin after the click
		// returned: the next look at the page reports it.
		out = h.call("browser_snapshot", map[string]any{})
	}
	mustContain(t, out, "Downloaded report.csv (8 bytes)", "to /tmp/downloads/report.csv (in the terminal; "+saved+" for the file tools)")
	// The terminal of the session finds it where the browser said.
	proc, err := sb.Start(h.ctx(), sandbox.Cmd{Args: []string{"cat", "/tmp/downloads/report.csv"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &buf, Stderr: &buf})
	if err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	if buf.String() != "a,b\n1,2\n" {
		t.Fatalf("the terminal reads %q", buf.String())
	}
	if b, err := os.ReadFile(saved); err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("download: %q %v", b, err)
	}

	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/dialog"})
	out = h.call("browser_click", map[string]any{"ref": ref(t, out, "button", "Delete")})
	mustContain(t, out, "confirm dialog is open")
	out = h.call("browser_dialog", map[string]any{"action": "accept"})
	out = h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, out, "confirmed")

	// A sandboxed browser that dies is started again at the next call.
	killed := false
	for _, pid := range marked(h.b.mark) {
		if cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); strings.Contains(string(cmd), "--remote-debugging-pipe") {
			syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
	}
	if !killed {
		t.Fatal("no browser process to kill")
	}
	s := h.b.sessionOf(h.ctx())
	deadline := time.Now().Add(10 * time.Second)
	for alive(s.l) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out = h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	mustContain(t, out, "a new one was started", `- heading "Sign up"`)
}

// TestSandboxedNetworkPolicy: under sandbox.network_allow the browser
// reaches the allowed host and no other, loopback included: every request
// goes through the sandbox's proxy.
func TestSandboxedNetworkPolicy(t *testing.T) {
	allowed, denied := site(t), site(t)
	home := t.TempDir()
	p := sandbox.Defaults(home, filepath.Join(home, ".hermes"))
	au, _ := url.Parse(allowed.URL)
	p.Network, p.Allow = sandbox.NetAllow, []string{au.Host}
	h := newHarness(t, Config{Sandboxes: sandboxes(t, p)})
	out := h.call("browser_navigate", map[string]any{"url": allowed.URL + "/form"})
	mustContain(t, out, `- heading "Sign up"`)

	// The proxy's refusal is the page.
	out = h.call("browser_navigate", map[string]any{"url": denied.URL + "/form"})
	if strings.Contains(out, "Sign up") {
		t.Fatalf("a host the policy denies loaded:\n%s", out)
	}
	full := h.call("browser_snapshot", map[string]any{"full": true})
	mustContain(t, full, "port "+strings.TrimPrefix(denied.URL, "http://127.0.0.1:")+" is not allowed (sandbox.network_allow)")
	// By name too: the name is the proxy's to look up, and it refuses.
	h.call("browser_navigate", map[string]any{"url": "http://example.com/"})
	mustContain(t, h.call("browser_snapshot", map[string]any{"full": true}), "example.com port 80 is not allowed")
	// A fetch from the allowed page to the denied host fails too.
	out = h.call("browser_navigate", map[string]any{"url": allowed.URL + "/form"})
	out = h.call("browser_console", map[string]any{"expression": "fetch('" + denied.URL + "/form').then(r => r.status + ' ' + r.ok).catch(e => 'failed: ' + e)"})
	if strings.Contains(out, "200 true") || !strings.Contains(out, "failed: TypeError") {
		t.Fatalf("a fetch to a denied host did not fail:\n%s", out)
	}
	procs := marked(h.b.mark)
	if len(procs) == 0 {
		t.Fatal("no browser processes")
	}
	for _, pid := range procs {
		if nsOf(t, pid, "pid") == nsOf(t, os.Getpid(), "pid") || nsOf(t, pid, "mnt") == nsOf(t, os.Getpid(), "mnt") {
			t.Fatalf("browser process %d runs outside a sandbox's namespaces", pid)
		}
	}
	// The session's /tmp is the browser's: the terminal sees its files.
	sb, err := h.b.cfg.Sandboxes.For(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := filepath.Glob(filepath.Join(sb.TmpDir(), "hermes-browser-*")); len(ents) != 1 {
		t.Fatalf("the browser's profile is not in the session's /tmp: %v", ents)
	}
}

// TestSandboxedNetworkOff: with the session's network off, the browser
// reaches nothing, loopback included.
func TestSandboxedNetworkOff(t *testing.T) {
	srv := site(t)
	home := t.TempDir()
	p := sandbox.Defaults(home, filepath.Join(home, ".hermes"))
	p.Network = sandbox.NetOff
	h := newHarness(t, Config{Sandboxes: sandboxes(t, p)})
	out := h.call("browser_navigate", map[string]any{"url": srv.URL + "/form"})
	if strings.Contains(out, "Sign up") {
		t.Fatalf("a page loaded with the network off:\n%s", out)
	}
	mustContain(t, h.call("browser_snapshot", map[string]any{"full": true}), "the network is off (sandbox.network: off)")
	// Pages made in the browser still work.
	out = h.call("browser_navigate", map[string]any{"url": "data:text/html,<h1>Offline</h1><button>Fine</button>"})
	mustContain(t, out, `- heading "Offline"`, `- button "Fine" [ref=e1]`)
}
