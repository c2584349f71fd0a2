package llm_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// testPNG is a real 1×1 PNG.
var testPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func imageRequest(t *testing.T) (model.Request, string) {
	t.Helper()
	bs := blobs.Open(t.TempDir())
	ref, err := bs.PutImage(context.Background(), testPNG, "dot.png")
	if err != nil {
		t.Fatal(err)
	}
	return model.Request{Model: "m", Blobs: bs, MaxTokens: 100, Messages: []schema.Message{
		{Role: "user", Content: "what is in this picture?", Images: []schema.ImageRef{ref}}}}, base64.StdEncoding.EncodeToString(testPNG)
}

// find returns the first JSON object under v (depth first) for which ok
// holds.
func find(v any, ok func(map[string]any) bool) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		if ok(x) {
			return x
		}
		for _, c := range x {
			if m := find(c, ok); m != nil {
				return m
			}
		}
	case []any:
		for _, c := range x {
			if m := find(c, ok); m != nil {
				return m
			}
		}
	}
	return nil
}

// TestImagesOnTheWire: an image a user message names reaches each API
// mode as that mode's image content, holding exactly the file's bytes, next
// to the message's text.
func TestImagesOnTheWire(t *testing.T) {
	for _, mode := range []string{model.ModeChatCompletions, model.ModeResponses, model.ModeAnthropic} {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.New(llmtest.Reply{Content: "a single dot"})
			defer srv.Close()
			base := srv.URL
			if mode != model.ModeAnthropic {
				base += "/v1"
			}
			p, err := llm.New(llm.Config{APIMode: mode, BaseURL: base, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			req, b64 := imageRequest(t)
			resp, err := p.Complete(context.Background(), req, func(model.Delta) {})
			if err != nil || resp.Content != "a single dot" {
				t.Fatalf("%+v %v", resp, err)
			}
			body := srv.Requests()[0].Body
			var img map[string]any
			switch mode {
			case model.ModeChatCompletions:
				img = find(body, func(m map[string]any) bool { return m["type"] == "image_url" })
				if img == nil || img["image_url"].(map[string]any)["url"] != "data:image/png;base64,"+b64 {
					t.Fatalf("no image_url part with the bytes: %s", srv.Requests()[0].Raw)
				}
			case model.ModeResponses:
				img = find(body, func(m map[string]any) bool { return m["type"] == "input_image" })
				if img == nil || img["image_url"] != "data:image/png;base64,"+b64 {
					t.Fatalf("no input_image part with the bytes: %s", srv.Requests()[0].Raw)
				}
			case model.ModeAnthropic:
				img = find(body, func(m map[string]any) bool { return m["type"] == "image" })
				src, _ := img["source"].(map[string]any)
				if src["type"] != "base64" || src["media_type"] != "image/png" || src["data"] != b64 {
					t.Fatalf("no base64 image block with the bytes: %s", srv.Requests()[0].Raw)
				}
			}
			if !bytes.Contains(srv.Requests()[0].Raw, []byte("what is in this picture?")) {
				t.Fatal("the text of the message was lost")
			}
		})
	}
}

// recorder is a server that keeps the request body and refuses the call:
// enough to see what a provider put on the wire.
func recorder(t *testing.T) (*httptest.Server, func() []byte) {
	var mu sync.Mutex
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":400,"message":"recorded","status":"INVALID_ARGUMENT"},"message":"recorded"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []byte { mu.Lock(); defer mu.Unlock(); return got }
}

// The native Gemini and Bedrock modes send the image too: inline data
// (base64 in Gemini's JSON) and an image block (base64 in Converse's).
func TestImagesOnTheWireGeminiBedrock(t *testing.T) {
	t.Run(model.ModeGemini, func(t *testing.T) {
		srv, body := recorder(t)
		p, err := llm.New(llm.Config{Provider: "gemini", BaseURL: srv.URL + "/v1beta", APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		req, b64 := imageRequest(t)
		p.Complete(context.Background(), req, func(model.Delta) {})
		var v any
		json.Unmarshal(body(), &v)
		inline := find(v, func(m map[string]any) bool { _, ok := m["inlineData"]; return ok })
		d, _ := inline["inlineData"].(map[string]any)
		if d["mimeType"] != "image/png" || d["data"] != b64 {
			t.Fatalf("no inline image with the bytes: %s", body())
		}
	})
	t.Run(model.ModeBedrock, func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
		srv, body := recorder(t)
		p, err := llm.New(llm.Config{Provider: "bedrock", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		req, b64 := imageRequest(t)
		p.Complete(context.Background(), req, func(model.Delta) {})
		var v any
		json.Unmarshal(body(), &v)
		img := find(v, func(m map[string]any) bool { _, ok := m["image"]; return ok })
		im, _ := img["image"].(map[string]any)
		src, _ := im["source"].(map[string]any)
		if im["format"] != "png" || src["bytes"] != b64 {
			t.Fatalf("no image block with the bytes: %s", body())
		}
	})
}

// An image whose blob is gone fails the call with the reason, rather than
// sending the question without the picture.
func TestMissingImageFailsTheCall(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "never"})
	defer srv.Close()
	p, _ := llm.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: "k"})
	req, _ := imageRequest(t)
	req.Blobs = blobs.Open(t.TempDir())
	_, err := p.Complete(context.Background(), req, func(model.Delta) {})
	if err == nil || !strings.Contains(err.Error(), "missing") || len(srv.Requests()) != 0 {
		t.Fatalf("err %v, %d requests", err, len(srv.Requests()))
	}
	// Without a blob store (a summary call), the image is a line of text.
	req.Blobs = nil
	if _, err := p.Complete(context.Background(), req, func(model.Delta) {}); err != nil {
		t.Fatal(err)
	}
	if raw := string(srv.Requests()[0].Raw); !strings.Contains(raw, "[image dot.png: image/png") || strings.Contains(raw, "base64") {
		t.Fatalf("request %s", raw)
	}
}

// TestImageTurnAgainstAimock sends a turn with a picture through each API
// mode to aimock, a third-party implementation of the wire formats: it
// takes the multi-part message and answers by its text.
func TestImageTurnAgainstAimock(t *testing.T) {
	const fx = `{"fixtures": [{"match": {"userMessage": "what is in this picture?"}, "response": {"content": "A dot."}}]}`
	for _, mode := range []string{model.ModeChatCompletions, model.ModeAnthropic, model.ModeResponses} {
		t.Run(mode, func(t *testing.T) {
			base := startAimock(t, fx)
			if mode != model.ModeAnthropic {
				base += "/v1"
			}
			p, err := llm.New(llm.Config{APIMode: mode, BaseURL: base, APIKey: "test-key"})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := imageRequest(t)
			r := &rec{}
			loop := &agent.Loop{Provider: p, Tools: tool.NewTools(), Exec: tool.DirectExecutor{}, Rec: r, Budget: tool.NewBudget(3),
				Cfg: agent.Config{Model: "gpt-4o-mini"}, Blobs: req.Blobs}
			out, err := loop.TurnMessage(context.Background(), &history.Transcript{System: "You are Hermes."}, "t",
				schema.UserMessageAdded{Content: req.Messages[0].Content, Images: req.Messages[0].Images})
			if err != nil || out != "A dot." {
				t.Fatalf("answer %q, %v", out, err)
			}
		})
	}
}
