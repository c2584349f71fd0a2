package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestGatewayAPIServer runs `hermes gateway run` with the API server on
// and talks to it over HTTP: a completion, then the session routes reading
// what the turn wrote.
func TestGatewayAPIServer(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Bonjour from the gateway.", Prompt: 40, Completion: 6})
	defer srv.Close()
	home := t.TempDir()
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--home", home, "--log-level", "info", "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env = chatEnv(srv, "API_SERVER_ENABLED=true", "API_SERVER_KEY=k-test-0123456789abcdef", "API_SERVER_PORT="+strconv.Itoa(port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
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
	call := func(method, path, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k-test-0123456789abcdef")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, _ := call("GET", "/health", ""); code == 200 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the gateway exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not come up:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, h, body := call("POST", "/v1/chat/completions", `{"model":"hermes-agent","messages":[{"role":"user","content":"Say hello in French"}]}`)
	if code != 200 || !strings.Contains(body, "Bonjour from the gateway.") {
		t.Fatalf("completion: %d %s\n%s", code, body, stderr.String())
	}
	sid := h.Get("X-Hermes-Session-Id")
	var c struct {
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	if json.Unmarshal([]byte(body), &c) != nil || c.Usage.TotalTokens != 46 {
		t.Fatalf("usage: %s", body)
	}
	code, _, body = call("GET", "/api/sessions", "")
	if code != 200 || !strings.Contains(body, sid) || !strings.Contains(body, `"source":"api"`) {
		t.Fatalf("sessions: %d %s", code, body)
	}
	code, _, body = call("GET", "/api/sessions/"+sid, "")
	if code != 200 || !strings.Contains(body, "Say hello in French") || !strings.Contains(body, "Bonjour from the gateway.") {
		t.Fatalf("session: %d %s", code, body)
	}
	code, _, body = call("GET", "/api/search?q=bonjour", "")
	if code != 200 || !strings.Contains(body, sid) {
		t.Fatalf("search: %d %s", code, body)
	}
	code, _, body = call("GET", "/v1/models", "")
	if code != 200 || !strings.Contains(body, `"hermes-agent"`) || !strings.Contains(body, `"gpt-4o-mini"`) {
		t.Fatalf("models: %d %s", code, body)
	}
	if code, _, _ := call("GET", "/v1/models", ""); code != 200 {
		t.Fatal(code)
	}
	// The same server serves the dashboard with the same key: the session,
	// its lineage, the costs and the gateway's platforms.
	for path, want := range map[string]string{"/dashboard/": sid, "/dashboard/s/" + sid: "Bonjour from the gateway.",
		"/dashboard/lineage/" + sid: `class="node current"`, "/dashboard/costs": "gpt-4o-mini", "/dashboard/gateway": "<td>api</td>", "/dashboard/cron": "No scheduled jobs"} {
		if code, _, body := call("GET", path, ""); code != 200 || !strings.Contains(body, want) {
			t.Fatalf("%s: %d, want %q in\n%s", path, code, want, body)
		}
	}
	// While the gateway runs, `hermes dashboard` on its home points to it.
	if _, stderr, code := hermes(t, chatEnv(srv), "", "--home", home, "dashboard", "--port", "0"); code == 0 || !strings.Contains(stderr, "serves the dashboard at /dashboard/") {
		t.Fatalf("hermes dashboard beside a gateway: exit %d\n%s", code, stderr)
	}
	// The key is required.
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("without the key: %v %v", resp, err)
	}
	resp.Body.Close()
	// gateway status shows the API platform connected (status.json is
	// rewritten every 2 s).
	var out string
	ok := func() bool {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 4 && f[0] == "api" {
				return f[1] == "yes" && f[2] == "1" && f[3] == "1"
			}
		}
		return false
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !ok(); time.Sleep(200 * time.Millisecond) {
		out = mustRun(t, home, "gateway", "status")
	}
	if !ok() {
		t.Fatalf("status:\n%s", out)
	}
}

func TestGatewayAPIServerRefusesNetworkWithoutKey(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	_, stderr, code := hermes(t, chatEnv(srv, "API_SERVER_ENABLED=true", "API_SERVER_HOST=0.0.0.0", "API_SERVER_PORT="+strconv.Itoa(freePort(t))),
		"", "--home", t.TempDir(), "gateway", "run", "--model", "gpt-4o-mini")
	if code == 0 || !strings.Contains(stderr, "a key is required") || !strings.Contains(stderr, "API_SERVER_KEY") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}
