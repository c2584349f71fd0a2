package dashboard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/events/embedded"
)

// loneDashboard serves the dashboard alone on a loopback server.
func loneDashboard(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h, err := dashboard.New(dashboard.Options{Key: testKey, Store: store, Read: gatewaytest.OpenProjections(t, store, dir), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestWeakKeyRefused: a key shorter than MinKeyLen starts no dashboard.
func TestWeakKeyRefused(t *testing.T) {
	for _, k := range []string{"k", "hunter2", "  0123456789abcd  "} {
		if _, err := dashboard.New(dashboard.Options{Key: k}); !errors.Is(err, dashboard.ErrWeakKey) {
			t.Errorf("key %q: %v, want ErrWeakKey", k, err)
		}
	}
}

// TestLoginThrottle: five wrong keys from one address — by the form or as
// bearer headers — and the next attempt is refused with 429 and a
// Retry-After, even with the right key, and gets no session cookie.
func TestLoginThrottle(t *testing.T) {
	for _, by := range []string{"form", "bearer"} {
		t.Run(by, func(t *testing.T) {
			srv := loneDashboard(t)
			wrong := func() int {
				if by == "form" {
					_, resp, _ := login(t, srv.URL, "not-the-key-at-all")
					return resp.StatusCode
				}
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/dashboard/", nil)
				req.Header.Set("Authorization", "Bearer not-the-key-at-all")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := range 5 {
				if code := wrong(); code != http.StatusUnauthorized {
					t.Fatalf("wrong key %d: %d, want 401", i+1, code)
				}
			}
			if code := wrong(); code != http.StatusTooManyRequests {
				t.Fatalf("sixth wrong key: %d, want 429", code)
			}
			// The right key is refused too while the address is throttled.
			_, resp, page := login(t, srv.URL, testKey)
			if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(page, "Too many wrong keys") {
				t.Fatalf("right key while throttled: %d", resp.StatusCode)
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("a throttled login says nothing of when to retry")
			}
			for _, h := range resp.Header.Values("Set-Cookie") {
				if strings.HasPrefix(h, "hermes_dashboard=") {
					t.Fatalf("a throttled login got a session cookie: %s", h)
				}
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/dashboard/", nil)
			req.Header.Set("Authorization", "Bearer "+testKey)
			r2, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r2.Body.Close()
			if r2.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("right bearer key while throttled: %d, want 429", r2.StatusCode)
			}
		})
	}
}

// TestSecureCookieBehindTLS: the session cookie is Secure when the browser
// came over TLS (here: a proxy's X-Forwarded-Proto), and not over plain
// HTTP on loopback, where a Secure cookie would never come back.
func TestSecureCookieBehindTLS(t *testing.T) {
	srv := loneDashboard(t)
	for _, proto := range []string{"", "https"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/dashboard/login", nil)
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var c string
		for _, h := range resp.Header.Values("Set-Cookie") {
			if strings.HasPrefix(h, "hermes_dashboard_login=") {
				c = h
			}
		}
		if secure := strings.Contains(c, "Secure"); secure != (proto == "https") {
			t.Fatalf("X-Forwarded-Proto %q: cookie %q", proto, c)
		}
	}
}
