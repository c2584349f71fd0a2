package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with platforms.slack in config.yaml (the allow-list
// from SLACK_ALLOWED_USERS) receives a signed Events API request on its
// endpoint and posts the answer to slacktest — slack-go's own test server
// for the Web API, not Slack — whose WebSocket relays every posted message
// to a connected client, as the test reads it. The tokens and the signing
// secret appear in no log line.
func TestSlackGatewayAnswersOverTheEventsAPI(t *testing.T) {
	peer := slacktest.NewTestServer()
	peer.Start()
	defer peer.Stop()
	srv := llmtest.New(llmtest.Reply{Content: "**pong** & more"})
	defer srv.Close()

	const (
		botToken = "xoxb-0000000001-0000000002-cmdtestbottokenvalue"
		secret   = "cmd-test-signing-secret-0123456789"
	)
	port := freePort(t)
	home := t.TempDir()
	cfg := fmt.Sprintf("platforms:\n  slack:\n    bot_token: %s\n    signing_secret: %s\n    events_listen: 127.0.0.1:%d\n    api_url: %s\n",
		botToken, secret, port, peer.GetAPIURL())
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := chatEnv(srv, "SLACK_ALLOWED_USERS=UALICE01")

	// A client of slacktest's WebSocket: it sees each chat.postMessage.
	ws, _, err := websocket.DefaultDialer.Dial(peer.GetWSURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var (
		mu     sync.Mutex
		posted []map[string]any
	)
	go func() {
		for {
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			mu.Lock()
			posted = append(posted, m)
			mu.Unlock()
		}
	}()

	g := startGateway(t, home, env)
	ev := map[string]any{"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "Ev1", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "message", "channel": "D0ALICE1", "channel_type": "im", "user": "UALICE01", "text": "ping", "ts": "1700000001.000100"}}
	body, _ := json.Marshal(ev)
	stamp := fmt.Sprint(time.Now().Unix())
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + stamp + ":" + string(body)))
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/slack/events", port), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("signed event: %d", resp.StatusCode)
	}
	waitUntil(t, "the answer posted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range posted {
			if m["channel"] == "D0ALICE1" && m["text"] == "*pong* &amp; more" {
				return true
			}
		}
		return false
	})
	waitUntil(t, "the delivery recorded", func() bool { return countGatewayEvents(t, home, "GatewayMessageDelivered") == 1 })
	g.kill()
	for _, s := range []string{botToken, secret} {
		if strings.Contains(g.stderr.String(), s) {
			t.Fatal("the gateway logged a Slack secret")
		}
	}
}

// A misspelt platforms.slack key stops hermes, naming the key meant.
func TestSlackConfigKeyTypo(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nplatforms:\n  slack:\n    signing_secrt: x\n"), 0o600)
	_, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "gateway", "run")
	if code == 0 || !strings.Contains(errOut, "did you mean platforms.slack.signing_secret?") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}
