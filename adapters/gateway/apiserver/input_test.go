package apiserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

func TestBadRequests(t *testing.T) {
	r := newRig(t, nil)
	chat := `{"model":"hermes-agent","messages":[{"role":"user","content":"hi"}]}`
	big := append([]byte(`{"model":"hermes-agent","messages":[{"role":"user","content":"`), bytes.Repeat([]byte("a"), 10<<20)...)
	big = append(big, []byte(`"}]}`)...)
	invalidUTF8 := []byte("{\"model\":\"hermes-agent\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}")
	long := `{"model":"hermes-agent","messages":[{"role":"user","content":"` + strings.Repeat("b", 1<<20) + `"}]}`
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		header                    map[string]string
		status                    int
		code                      string
	}{
		{"no key", "POST", "/v1/chat/completions", "application/json", []byte(chat), map[string]string{"Authorization": ""}, 401, "missing_api_key"},
		{"wrong key", "POST", "/v1/chat/completions", "application/json", []byte(chat), map[string]string{"Authorization": "Bearer sk-wrong"}, 401, "invalid_api_key"},
		{"not bearer", "GET", "/v1/models", "", nil, map[string]string{"Authorization": "Basic " + testKey}, 401, "missing_api_key"},
		{"key on the session routes too", "GET", "/api/sessions", "", nil, map[string]string{"Authorization": ""}, 401, "missing_api_key"},
		{"10 MB body", "POST", "/v1/chat/completions", "application/json", big, nil, 413, "request_too_large"},
		{"malformed JSON", "POST", "/v1/chat/completions", "application/json", []byte(`{"model":`), nil, 400, "invalid_json"},
		{"wrong JSON type", "POST", "/v1/chat/completions", "application/json", []byte(`{"messages":"hi"}`), nil, 400, "invalid_json"},
		{"invalid UTF-8", "POST", "/v1/chat/completions", "application/json", invalidUTF8, nil, 400, "invalid_utf8"},
		{"wrong content type", "POST", "/v1/chat/completions", "text/plain", []byte(chat), nil, 415, "unsupported_media_type"},
		{"no content type", "POST", "/v1/responses", "", []byte(`{"input":"hi"}`), nil, 415, "unsupported_media_type"},
		{"unknown route", "GET", "/v1/embeddings", "", nil, nil, 404, "unknown_url"},
		{"unknown route, POST", "POST", "/v2/chat/completions", "application/json", []byte(chat), nil, 404, "unknown_url"},
		{"wrong method", "GET", "/v1/chat/completions", "", nil, nil, 405, "method_not_allowed"},
		{"no messages", "POST", "/v1/chat/completions", "application/json", []byte(`{"model":"hermes-agent","messages":[]}`), nil, 400, "invalid_messages"},
		{"last message not the user's", "POST", "/v1/chat/completions", "application/json",
			[]byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`), nil, 400, "invalid_messages"},
		{"an image", "POST", "/v1/chat/completions", "application/json",
			[]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`), nil, 400, "invalid_messages"},
		{"unknown role", "POST", "/v1/chat/completions", "application/json",
			[]byte(`{"messages":[{"role":"robot","content":"a"},{"role":"user","content":"b"}]}`), nil, 400, "invalid_messages"},
		{"empty text", "POST", "/v1/chat/completions", "application/json", []byte(`{"messages":[{"role":"user","content":"  "}]}`), nil, 400, "empty_message"},
		{"text over the router's limit", "POST", "/v1/chat/completions", "application/json", []byte(long), nil, 400, "message_too_long"},
		{"responses without input", "POST", "/v1/responses", "application/json", []byte(`{"model":"hermes-agent"}`), nil, 400, "invalid_input"},
		{"approvals, wrong method", "DELETE", "/v1/approvals/x", "", nil, nil, 405, "method_not_allowed"},
		{"approvals, nothing waits", "GET", "/v1/approvals/x", "", nil, nil, 404, "no_question"},
		{"sessions, bad limit", "GET", "/api/sessions?limit=-3", "", nil, nil, 400, "invalid_limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := r.do(t, c.method, c.path, c.ctype, c.body, c.header)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Code == nil || *e.Error.Code != c.code {
				t.Fatalf("error body %s (want code %s)", b, c.code)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
	// None of it reached the agent.
	if n := len(r.llm.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
	// /health needs no key.
	resp, b := r.do(t, "GET", "/health", "", nil, map[string]string{"Authorization": ""})
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("health: %d %s", resp.StatusCode, b)
	}
}

func TestRefusesToStartWithoutKeyOffLoopback(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "::", "192.168.1.10", "example.org"} {
		_, err := apiserver.New(apiserver.Options{Host: host})
		if !errors.Is(err, apiserver.ErrKeyRequired) || !strings.Contains(err.Error(), "API_SERVER_KEY") {
			t.Fatalf("host %s without a key: %v", host, err)
		}
		if _, err := apiserver.New(apiserver.Options{Host: host, Key: "k"}); err != nil {
			t.Fatalf("host %s with a key: %v", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"} {
		if _, err := apiserver.New(apiserver.Options{Host: host}); err != nil {
			t.Fatalf("loopback %s without a key: %v", host, err)
		}
	}
	if _, err := apiserver.New(apiserver.Options{CORSOrigins: []string{"example.org"}}); err == nil {
		t.Fatal("a CORS origin without a scheme was taken")
	}
}

func TestKeylessOnLoopback(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "hello"}}, func(o *apiserver.Options) { o.Key = "" })
	resp, b := r.postJSON(t, "/v1/chat/completions", map[string]any{"model": apiserver.Alias,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"hello"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestCORS(t *testing.T) {
	r := newRig(t, nil, func(o *apiserver.Options) { o.CORSOrigins = []string{"http://app.example"} })
	pre := map[string]string{"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type, x-hermes-session-id, x-stainless-os", "Authorization": ""}
	resp, _ := r.do(t, http.MethodOptions, "/v1/chat/completions", "", nil, pre)
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://app.example" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-hermes-session-id") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	pre["Origin"] = "http://evil.example"
	if resp, _ := r.do(t, http.MethodOptions, "/v1/chat/completions", "", nil, pre); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = r.do(t, http.MethodGet, "/v1/models", "", nil, map[string]string{"Origin": "http://app.example"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://app.example" || resp.Header.Get("Access-Control-Expose-Headers") != apiserver.SessionHeader {
		t.Fatalf("CORS headers: %v", resp.Header)
	}
	resp, _ = r.do(t, http.MethodGet, "/v1/models", "", nil, map[string]string{"Origin": "http://evil.example"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("another origin was allowed")
	}
	// Off by default.
	r2 := newRig(t, nil)
	resp, _ = r2.do(t, http.MethodGet, "/v1/models", "", nil, map[string]string{"Origin": "http://app.example"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS on by default")
	}
}
