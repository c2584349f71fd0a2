package apiserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// wantImages asks newRig for an API server that takes images, kept in the
// rig's blob store.
type wantImages struct{}

func (wantImages) PutImage(context.Context, []byte, string) (schema.ImageRef, error) {
	panic("replaced by newRig")
}

func withImages(o *apiserver.Options) { o.Images = wantImages{} }

// blobImages is the router's Images for the rig: the attachments the API
// server stored name their blobs (cmd/hermes wires app.AttachmentImages,
// which also reads platforms' cached files).
func blobImages(_ context.Context, atts []schema.Attachment) ([]schema.ImageRef, []string, error) {
	var refs []schema.ImageRef
	for _, a := range atts {
		if a.SHA256 != "" {
			refs = append(refs, schema.ImageRef{SHA256: a.SHA256, MediaType: a.MimeType, Size: a.Size, Name: a.Name})
		}
	}
	return refs, nil, nil
}

var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

var dotURL = "data:image/png;base64," + base64.StdEncoding.EncodeToString(dotPNG)

// An image_url part (chat completions) and an input_image part (Responses)
// reach the model as image content with the image's bytes.
func TestImagePartsReachTheModel(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "A dot."}, {Content: "Another dot."}}, withImages)
	resp, b := r.postJSON(t, "/v1/chat/completions", map[string]any{"model": "hermes-agent", "messages": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "what is this?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": dotURL, "detail": "low"}}}}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "A dot.") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b = r.postJSON(t, "/v1/responses", map[string]any{"model": "hermes-agent", "input": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "and this?"},
			map[string]any{"type": "input_image", "image_url": dotURL}}}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Another dot.") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for i, q := range []string{"what is this?", "and this?"} {
		raw := r.llm.Requests()[i].Raw
		if !bytes.Contains(raw, []byte(`"url":"`+dotURL+`"`)) || !bytes.Contains(raw, []byte(q)) {
			t.Fatalf("request %d carries no image part with the bytes: %s", i, raw)
		}
	}
	rs, err := r.store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rs {
		if bytes.Contains(e.Payload, []byte(base64.StdEncoding.EncodeToString(dotPNG))) {
			t.Fatalf("an event holds the image's bytes: %s %s", e.Type, e.Payload)
		}
	}
}

// Remote URLs, bytes that are not an image and images over the limit are
// refused with the reason; nothing reaches the agent or the log.
func TestImagePartsRefused(t *testing.T) {
	r := newRig(t, nil, withImages)
	big := "data:image/png;base64," + base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 21<<20)...))
	for _, c := range []struct {
		url, want string
	}{
		{"https://example.com/cat.png", "remote image URLs are not fetched"},
		{"data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("hello, not a picture")), "not a PNG, JPEG, GIF or WebP image"},
		{"data:image/png,rawbytes", "must be base64"},
		{"data:image/png;base64,@@@", "not valid base64"},
		{big, "larger than 20 MiB"},
	} {
		resp, b := r.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "look"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": c.url}}}}}}, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), "invalid_messages") {
			t.Fatalf("%.40s: %d %s", c.url, resp.StatusCode, b)
		}
	}
	if n := len(r.llm.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
	rs, _ := r.store.ReadAll(context.Background(), 0, 0)
	for _, e := range rs {
		if e.Type == schema.TypeGatewayMessageReceived || e.Type == schema.TypeUserMessageAdded {
			t.Fatalf("a refused request was recorded: %s", e.Type)
		}
	}
}

// A server not given a blob store says so.
func TestImagePartsWithoutAStore(t *testing.T) {
	r := newRig(t, nil)
	resp, b := r.postJSON(t, "/v1/responses", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_image", "image_url": dotURL}}}}}, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "takes no images") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// A message of an image alone (no text) is a turn too.
func TestImageOnlyMessage(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "A dot, no question."}}, withImages)
	resp, b := r.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": dotURL}}}}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "A dot, no question.") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if raw := r.llm.Requests()[0].Raw; !bytes.Contains(raw, []byte(`"url":"`+dotURL+`"`)) {
		t.Fatalf("request %s", raw)
	}
}
