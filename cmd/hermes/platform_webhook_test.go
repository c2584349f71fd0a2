package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/webhook"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with a webhook route, as the README shows it: a
// signed POST starts a turn and the answer reaches the callback URL.
func TestGatewayRunWebhook(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Deployed api to staging."})
	defer srv.Close()
	got := make(chan map[string]any, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify("topsecret", r.Header, body, time.Now(), webhook.DefaultWindow) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var v map[string]any
		json.Unmarshal(body, &v)
		got <- v
	}))
	defer rcv.Close()
	home := t.TempDir()
	port := freePort(t)
	cfg := fmt.Sprintf(`platforms:
  webhook:
    enabled: true
    port: %d
    routes:
      deploy:
        prompt: "Deploy {{.service}} to {{.env}}"
        deliver: %s
`, port, rcv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--home", home, "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env = chatEnv(srv, "WEBHOOK_SECRET=topsecret")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("gateway exit: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the gateway did not stop on SIGTERM")
		}
	}()

	body := []byte(`{"service":"api","env":"staging"}`)
	url := fmt.Sprintf("http://127.0.0.1:%d/webhooks/deploy", port)
	var status int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hermes-Signature", webhook.Sign("topsecret", time.Now(), body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // not listening yet
		}
		res.Body.Close()
		status = res.StatusCode
		break
	}
	if status != http.StatusAccepted {
		t.Fatalf("POST: %d\n%s", status, stderr.String())
	}
	select {
	case v := <-got:
		if v["text"] != "Deployed api to staging." || v["route"] != "deploy" {
			t.Fatalf("callback %v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no callback\n%s", stderr.String())
	}
	if msgs := srv.Requests()[0].Body["messages"].([]any); !strings.Contains(fmt.Sprint(msgs[len(msgs)-1]), "Deploy api to staging") {
		t.Fatalf("prompt %v", msgs[len(msgs)-1])
	}
}

// A route that forwards answers to a platform this gateway does not run
// is refused at start, naming the key.
func TestGatewayRunWebhookChecksTargets(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	home := t.TempDir()
	cfg := fmt.Sprintf("platforms:\n  webhook:\n    enabled: true\n    port: %d\n    routes:\n      alerts:\n        deliver: telegram:12345\n", freePort(t))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	_, errOut, code := hermes(t, chatEnv(srv, "WEBHOOK_SECRET=x"), "", "--home", home, "gateway", "run", "--model", "m")
	if code == 0 || !strings.Contains(errOut, "platforms.webhook") || !strings.Contains(errOut, "telegram") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// And a route without any secret.
	_, errOut, code = hermes(t, chatEnv(srv), "", "--home", home, "gateway", "run", "--model", "m")
	if code == 0 || !strings.Contains(errOut, "routes.alerts.secret") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
