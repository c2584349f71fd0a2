package gemini

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

func TestSplitVersion(t *testing.T) {
	for _, c := range []struct{ in, base, version string }{
		{"", "https://generativelanguage.googleapis.com/", "v1beta"},
		{"https://generativelanguage.googleapis.com/v1beta", "https://generativelanguage.googleapis.com/", "v1beta"},
		{"https://generativelanguage.googleapis.com/v1/", "https://generativelanguage.googleapis.com/", "v1"},
		{"http://127.0.0.1:9/proxy/v1beta", "http://127.0.0.1:9/proxy/", "v1beta"},
		{"http://127.0.0.1:9", "http://127.0.0.1:9/", "v1beta"},
	} {
		b, v, err := splitVersion(c.in)
		if err != nil || b != c.base || v != c.version {
			t.Errorf("splitVersion(%q) = %q %q %v, want %q %q", c.in, b, v, err, c.base, c.version)
		}
	}
	if _, _, err := splitVersion("not a url"); err == nil {
		t.Error("a bad base URL was accepted")
	}
}

// History becomes alternating contents: a tool result is a function
// response in a user turn named after its call, parallel results are
// merged into one turn, and a call replayed keeps the thought signature it
// came with (or Google's documented skip value when it came from elsewhere).
func TestContents(t *testing.T) {
	p, err := New(Options{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	p.remember("a", []byte("sig-a"))
	got := p.Contents([]schema.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []schema.ToolCall{
			{ID: "a", Function: schema.FunctionCall{Name: "read", Arguments: `{"path":"x"}`}},
			{ID: "b", Function: schema.FunctionCall{Name: "ls", Arguments: ``}},
		}},
		{Role: "tool", ToolCallID: "a", Content: "X"},
		{Role: "tool", ToolCallID: "b", Content: "Y"},
		{Role: "assistant", Content: "done"},
	})
	if len(got) != 4 || got[0].Role != genai.RoleUser || got[1].Role != genai.RoleModel || got[2].Role != genai.RoleUser || got[3].Role != genai.RoleModel {
		t.Fatalf("contents %+v", got)
	}
	calls := got[1].Parts
	if calls[0].FunctionCall.Args["path"] != "x" || string(calls[0].ThoughtSignature) != "sig-a" || string(calls[1].ThoughtSignature) != skipSignature {
		t.Fatalf("calls %+v %+v", calls[0], calls[1])
	}
	res := got[2].Parts
	if len(res) != 2 || res[0].FunctionResponse.Name != "read" || res[0].FunctionResponse.ID != "a" || res[1].FunctionResponse.Response["output"] != "Y" {
		t.Fatalf("results %+v", res)
	}
}

func TestConfig(t *testing.T) {
	req := model.Request{System: "sys", MaxTokens: 100, Tools: []model.ToolSpec{{Name: "ls", Description: "list"}}}
	c := Config(req)
	if c.SystemInstruction.Parts[0].Text != "sys" || c.MaxOutputTokens != 100 || len(c.Tools) != 1 || c.Tools[0].FunctionDeclarations[0].Name != "ls" {
		t.Fatalf("config %+v", c)
	}
	req.NoTools = true
	if c := Config(req); len(c.Tools) != 0 {
		t.Fatal("tools sent on a no-tools call")
	}
}

// A broken server gets errors the recovery ladder can classify: a stream
// that ends without a finishReason is cut, an HTML page is malformed, a
// 503 keeps its status.
func TestBrokenServers(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		ctype  string
		body   string
		check  func(*model.ProviderError) bool
	}{
		{"cut", 200, "text/event-stream", "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}]}\n\n",
			func(pe *model.ProviderError) bool { return errors.Is(pe, model.ErrStreamCut) }},
		{"html", 200, "text/html", "<html>login</html>",
			func(pe *model.ProviderError) bool { return errors.Is(pe, model.ErrMalformedStream) }},
		{"unavailable", 503, "application/json", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			func(pe *model.ProviderError) bool {
				return pe.Status == 503 && strings.Contains(pe.Message, "overloaded")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			p, err := New(Options{BaseURL: srv.URL + "/v1beta", APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
			var pe *model.ProviderError
			if !errors.As(err, &pe) || !c.check(pe) {
				t.Fatalf("error %#v", err)
			}
		})
	}
}
