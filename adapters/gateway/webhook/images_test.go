package webhook_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/webhook"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

// TestDeliveryImages: a route's images paths take the payload's pictures
// (base64 data: URLs, one or a list) into the cache as photo attachments
// of the turn's message; a value that is not a picture's data: URL refuses
// the delivery with 422 naming the path, and starts no turn.
func TestDeliveryImages(t *testing.T) {
	cache := t.TempDir()
	e := start(t, webhook.Config{CacheDir: cache, Routes: []webhook.Route{{Name: "shots", Secret: secret, Prompt: "Look at {{.title}}",
		Images: []string{"screenshot", "more.pics"}}}}, []llmtest.Reply{{Content: "seen"}})
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(dotPNG)
	body, _ := json.Marshal(map[string]any{"title": "the build page", "screenshot": url, "more": map[string]any{"pics": []any{url}}})
	if r := e.post(t, "shots", body, signedHermes(body)); r.Status != 202 {
		t.Fatalf("delivery: %+v", r)
	}
	gatewaytest.WaitFor(t, "the turn", func() bool { return gatewaytest.CountTypes(t, e.rig.Store, "TurnCompleted") == 1 })
	rs, err := e.rig.Store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got schema.GatewayMessageReceived
	for _, r := range rs {
		if r.Type == schema.TypeGatewayMessageReceived {
			_ = json.Unmarshal(r.Payload, &got)
		}
	}
	if len(got.Attachments) != 2 || got.Attachments[0].Kind != schema.AttachmentPhoto || got.Attachments[0].MimeType != "image/png" || got.Text != "Look at the build page" {
		t.Fatalf("message %+v", got)
	}
	if b, err := os.ReadFile(got.Attachments[1].Path); err != nil || !bytes.Equal(b, dotPNG) || !strings.HasPrefix(got.Attachments[1].Path, cache) {
		t.Fatalf("kept picture: %v", err)
	}
	for _, bad := range []any{"https://example.com/x.png", "data:image/png;base64,@@@", "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("hello")), 42} {
		body, _ := json.Marshal(map[string]any{"title": "x", "screenshot": bad})
		r := e.post(t, "shots", body, signedHermes(body))
		if msg, _ := r.Body["error"].(string); r.Status != 422 || !strings.Contains(msg, "screenshot[0]") {
			t.Fatalf("%v: %+v", bad, r)
		}
	}
	if n := len(e.rig.LLM.Requests()); n != 1 {
		t.Fatalf("%d model calls: a refused delivery started a turn", n)
	}
}
