package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// platforms.email's settings from the environment, and the errors that
// name what is wrong.
func TestResolveEmail(t *testing.T) {
	t.Setenv("EMAIL_ADDRESS", "bot@example.org")
	t.Setenv("EMAIL_IMAP_PORT", "143")
	t.Setenv("EMAIL_POLL_INTERVAL", "45")
	t.Setenv("EMAIL_ALLOWED_USERS", "Alice <ALICE@example.org>, bob@Example.org")
	e := EmailConfig{AllowedUsers: []string{"Carol@example.org"}, SMTPPort: 2525}
	if err := resolveEmail(&e); err != nil {
		t.Fatal(err)
	}
	d, _ := e.PollEvery()
	if e.Address != "bot@example.org" || e.IMAPPort != 143 || e.SMTPPort != 2525 || d != 45*time.Second ||
		strings.Join(e.AllowedUsers, ",") != "carol@example.org,alice@example.org,bob@example.org" {
		t.Fatalf("%+v (poll %s)", e, d)
	}
	for env, want := range map[string]string{
		"EMAIL_SMTP_PORT=70000":         "EMAIL_SMTP_PORT",
		"EMAIL_POLL_INTERVAL=soon":      "platforms.email.poll_interval",
		"EMAIL_ALLOWED_USERS=not-an-at": "platforms.email.allowed_users",
	} {
		t.Run(env, func(t *testing.T) {
			k, v, _ := strings.Cut(env, "=")
			t.Setenv(k, v)
			var e EmailConfig
			if err := resolveEmail(&e); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %v", env, err)
			}
		})
	}
}

// The environment over the file over the defaults, for the gateway; a bad
// value names its variable or key.
func TestGatewayPrecedence(t *testing.T) {
	for _, k := range []string{"GATEWAY_BUS", "API_SERVER_PORT", "API_SERVER_HOST", "API_SERVER_ENABLED", "WEBHOOK_PORT"} {
		t.Setenv(k, "")
	}
	var c Config
	c.Gateway.Bus = "nats://file:4222"
	c.Platforms.APIServer.Port = 9000
	s, err := Gateway(c)
	if err != nil || s.Bus != "nats://file:4222" || s.Platforms.APIServer.Port != 9000 || s.Platforms.APIServer.Host != "127.0.0.1" ||
		s.Platforms.Webhook.Port != 8644 || s.Drain != 30*time.Second {
		t.Fatalf("file and defaults: %+v %v", s, err)
	}
	t.Setenv("GATEWAY_BUS", "gochannel")
	t.Setenv("API_SERVER_PORT", "9100")
	t.Setenv("API_SERVER_ENABLED", "yes")
	if s, err = Gateway(c); err != nil || s.Bus != "gochannel" || s.Platforms.APIServer.Port != 9100 || !s.Platforms.APIServer.Enabled {
		t.Fatalf("the environment over the file: %+v %v", s, err)
	}
	t.Setenv("API_SERVER_PORT", "http")
	if _, err := Gateway(c); err == nil || !strings.Contains(err.Error(), `API_SERVER_PORT "http"`) {
		t.Fatalf("a bad API_SERVER_PORT: %v", err)
	}
	t.Setenv("API_SERVER_PORT", "")
	c.Gateway.Busy = "panic"
	if _, err := Gateway(c); err == nil || !strings.Contains(err.Error(), `gateway.busy "panic"`) {
		t.Fatalf("a bad gateway.busy: %v", err)
	}
}

// TestAPIServerModelRoutes: model_routes load from ours and from the
// Python agent's place (platforms.api_server.extra), ours winning on a
// name in both; max_body_bytes loads.
func TestAPIServerModelRoutes(t *testing.T) {
	dir := t.TempDir()
	yml := `platforms:
  api_server:
    max_body_bytes: 20000000
    model_routes:
      fast: {model: gpt-4.1-nano}
    extra:
      model_routes:
        fast: {model: ignored}
        cheap: {model: gpt-4o-mini, provider: openrouter}
`
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Platforms.APIServer
	r := a.Routes()
	if a.MaxBodyBytes != 20_000_000 || len(r) != 2 || r["fast"].Model != "gpt-4.1-nano" || r["cheap"].Provider != "openrouter" {
		t.Fatalf("max_body_bytes %d, routes %+v", a.MaxBodyBytes, r)
	}
}
