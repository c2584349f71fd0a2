package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWebTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/search":
			if r.URL.Query().Get("format") != "json" || r.Header.Get("Authorization") != "Bearer k" {
				http.Error(w, "bad request", 400)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"results": []map[string]any{
				{"title": "Go " + r.URL.Query().Get("q"), "url": "https://go.dev", "content": " The Go language "},
				{"title": "Two", "url": "https://two.example", "content": "second"}}})
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html><head><title>x</title><style>p{}</style></head><body><h1>Hello &amp; welcome</h1><script>evil()</script><p>First<br>Second</p></body></html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if Tools(Config{}, nil) != nil {
		t.Fatal("web tools offered without a provider")
	}
	ts := Tools(Config{SearchURL: srv.URL, APIKey: "k"}, srv.Client())
	out, err := ts[0].Run(context.Background(), json.RawMessage(`{"query":"generics","limit":1}`))
	if err != nil || out != "1. Go generics\n   https://go.dev\n   The Go language\n" {
		t.Fatalf("%q %v", out, err)
	}
	out, err = ts[1].Run(context.Background(), json.RawMessage(`{"urls":["`+srv.URL+`/page","`+srv.URL+`/missing","file:///etc/passwd"]}`))
	if err != nil || !strings.Contains(out, "Hello & welcome") || !strings.Contains(out, "First\nSecond") || strings.Contains(out, "evil") ||
		!strings.Contains(out, "404") || !strings.Contains(out, "only http and https") {
		t.Fatalf("%q %v", out, err)
	}
	bad := Tools(Config{SearchURL: srv.URL}, srv.Client())
	if _, err := bad[0].Run(context.Background(), json.RawMessage(`{"query":"x"}`)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("provider error: %v", err)
	}
}
