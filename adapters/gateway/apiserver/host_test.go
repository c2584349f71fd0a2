package apiserver_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// getAs sends GET path to the rig's listener with the Host header host.
func (r *rig) getAs(t *testing.T, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestKeylessServerChecksHost: without a key the server answers only
// requests addressed to a loopback name, so a page on another site that
// rebinds its name to 127.0.0.1 cannot drive the agent.
func TestKeylessServerChecksHost(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "hello"}}, func(o *apiserver.Options) { o.Key = "" })
	_, port, err := net.SplitHostPort(r.api.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port,
		"app.localhost:" + port, "192.168.1.10:" + port, "[fe80::1]:" + port, "[::1:" + port} {
		for _, path := range []string{"/v1/models", "/health", "/api/sessions"} {
			code, body := r.getAs(t, host, path)
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if code != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "host_not_allowed" ||
				!strings.Contains(e.Error.Message, "loopback") || !strings.Contains(e.Error.Message, "API_SERVER_KEY") {
				t.Errorf("Host %s %s: %d %s", host, path, code, body)
			}
		}
	}
	// A chat through a foreign Host never reaches the model.
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"hermes-agent","messages":[{"role":"user","content":"run rm -rf ~"}]}`))
	req.Host = "evil.example:" + port
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(r.llm.Requests()) != 0 {
		t.Fatalf("chat with a foreign Host: %d, %d model calls", resp.StatusCode, len(r.llm.Requests()))
	}

	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "localhost", "127.0.0.1", "[::1]", "LocalHost:" + port, "localhost.:" + port} {
		if code, body := r.getAs(t, host, "/v1/models"); code != http.StatusOK || !strings.Contains(body, apiserver.Alias) {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
	}
	req, _ = http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"hermes-agent","messages":[{"role":"user","content":"hi"}]}`))
	req.Host = "localhost:" + port
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"hello"`) {
		t.Fatalf("chat as localhost: %d %s", resp.StatusCode, b)
	}
}

// TestKeyedServerServesAnyHost: with a key the key is the check; a
// server behind a proxy or on a LAN name keeps working.
func TestKeyedServerServesAnyHost(t *testing.T) {
	r := newRig(t, nil)
	if code, body := r.getAs(t, "hermes.lan:8642", "/v1/models"); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
}
