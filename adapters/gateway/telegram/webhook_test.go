package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// Webhook mode end to end: the adapter registers its webhook with the
// emulator, which then posts the user's messages to it. telegram-test-api
// does not send the X-Telegram-Bot-Api-Secret-Token header that Telegram
// sends once setWebhook set a secret, so a proxy in between adds it, as
// Telegram would; the adapter refuses calls without it.
func TestEmulatorWebhook(t *testing.T) {
	emu := telegramtest.Start(t)
	const secret = "s3cret-Token_1"
	var (
		mu sync.Mutex
		ad *telegram.Adapter
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := ad
		mu.Unlock()
		addr := a.WebhookAddr(r.Context())
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr.String()+r.URL.Path, r.Body)
		req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
		req.Header.Set(telegram.SecretHeader, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	r := newRig(t, rigOptions{apiURL: emu.URL, webhookURL: proxy.URL + "/telegram/hook", listen: "127.0.0.1:0", secret: secret},
		allow("111"), llmtest.Reply{Content: "via the webhook"})
	mu.Lock()
	ad = r.adapter
	mu.Unlock()

	ctx := context.Background()
	if err := emu.Send(ctx, telegramtest.Token, telegramtest.DM(alice, "hello over a webhook")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, telegramtest.Token, alice.ID, 1, 20*time.Second)
	if got[0].Message.Text != "via the webhook" {
		t.Fatalf("answer %q", got[0].Message.Text)
	}

	// Callers without the secret are refused, and nothing is recorded.
	hook := "http://" + r.adapter.WebhookAddr(ctx).String() + "/telegram/hook"
	update := `{"update_id":99,"message":{"message_id":99,"date":1,"text":"forged","from":{"id":111,"is_bot":false,"first_name":"A"},"chat":{"id":111,"type":"private"}}}`
	for _, tc := range []struct {
		name, method, secret, body string
		want                       int
	}{
		{"no secret", http.MethodPost, "", update, http.StatusUnauthorized},
		{"wrong secret", http.MethodPost, "guess", update, http.StatusUnauthorized},
		{"GET", http.MethodGet, secret, "", http.StatusMethodNotAllowed},
		{"not an update", http.MethodPost, secret, "{not json", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tc.method, hook, strings.NewReader(tc.body))
		if tc.secret != "" {
			req.Header.Set(telegram.SecretHeader, tc.secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := countTypes(t, r.store, "GatewayMessageReceived"); n != 1 {
		t.Fatalf("%d messages recorded, want only the real one", n)
	}
}

// The webhook answers 500 (Telegram delivers again) until the update is
// recorded, and registers itself with one connection and the secret.
// (Our Bot API fake stands in for Telegram here.)
func TestFakeWebhookRefusesUntilRecorded(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, WebhookURL: "https://bot.example.org/hook",
		WebhookListen: "127.0.0.1:0", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fail := true
	var mu sync.Mutex
	var got []schema.Inbound
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ad.Run(ctx, func(_ context.Context, in schema.Inbound) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return errors.New("store unavailable")
			}
			got = append(got, in)
			return nil
		})
	}()
	waitFor(t, "the webhook registered", ad.Connected)
	calls := srv.Calls("setWebhook")
	if len(calls) != 1 {
		t.Fatalf("setWebhook calls %+v", calls)
	}
	p := calls[0].Params
	secret, _ := p["secret_token"].(string)
	if p["url"] != "https://bot.example.org/hook" || p["max_connections"] != float64(1) || len(secret) < 16 {
		t.Fatalf("setWebhook %+v", p)
	}
	post := func() int {
		body, _ := json.Marshal(dmUpdate(alice, 7, "retry me"))
		var u map[string]any
		_ = json.Unmarshal(body, &u)
		u["update_id"] = 70
		body, _ = json.Marshal(u)
		req, _ := http.NewRequest(http.MethodPost, "http://"+ad.WebhookAddr(ctx).String()+"/hook", bytes.NewReader(body))
		req.Header.Set(telegram.SecretHeader, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusInternalServerError {
		t.Fatalf("first delivery: HTTP %d, want 500", code)
	}
	if code := post(); code != http.StatusOK {
		t.Fatalf("second delivery: HTTP %d, want 200", code)
	}
	mu.Lock()
	if len(got) != 1 || got[0].MessageID != "111:7" || got[0].Text != "retry me" {
		t.Fatalf("inbox got %+v", got)
	}
	mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(srv.Calls("deleteWebhook")); n != 0 {
		t.Fatal("the webhook was deleted on the way down: Telegram would drop to getUpdates")
	}
}
