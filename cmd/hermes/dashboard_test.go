package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestDashboardCommand runs `hermes dashboard` with no key configured: it
// serves on loopback, prints a login link that works once, never prints
// the key it made up, and starts a new chat from its form.
func TestDashboardCommand(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Hello from a new chat."})
	defer srv.Close()
	home := t.TempDir()
	port := freePort(t)
	cmd := exec.Command(bin, "--home", home, "--log-level", "debug", "dashboard", "--port", strconv.Itoa(port), "--model", "gpt-4o-mini")
	cmd.Env = chatEnv(srv)
	var out syncBuffer
	cmd.Stderr, cmd.Stdout = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	linkRe := regexp.MustCompile(`log in once with: (http://127\.0\.0\.1:` + strconv.Itoa(port) + `/dashboard/login\?once=[0-9a-f]+)`)
	var link string
	deadline := time.Now().Add(30 * time.Second)
	for link == "" {
		if m := linkRe.FindStringSubmatch(out.String()); m != nil {
			link = m[1]
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("hermes dashboard exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no login link after 30 s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<h1>Sessions</h1>") {
		t.Fatalf("login link: %d\n%s", resp.StatusCode, b)
	}
	// The link works once.
	resp, err = http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the login link a second time: %d, want 401", resp.StatusCode)
	}
	if strings.Contains(out.String(), "sk-dashboard-") {
		t.Fatalf("the generated key was printed:\n%s", out.String())
	}

	// New chat: the form's message starts a session through the API
	// server's chat route; the browser lands on its page, which then
	// shows the answer.
	base := strings.SplitN(link, "/dashboard/", 2)[0]
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(b)
	if m == nil || !strings.Contains(string(b), `href="/dashboard/new"`) {
		t.Fatalf("no new-chat button or CSRF token on the list:\n%s", b)
	}
	resp, err = c.PostForm(base+"/dashboard/new", url.Values{"csrf": {string(m[1])}, "text": {"Hi from the dashboard"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.Path, "/dashboard/s/") {
		t.Fatalf("new chat: %d at %s\n%s\n%s", resp.StatusCode, resp.Request.URL, b, out.String())
	}
	page := resp.Request.URL.String()
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := c.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "Hello from a new chat.") && strings.Contains(string(b), "Hi from the dashboard") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new chat's page has no answer after 30 s:\n%s\n%s", b, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
