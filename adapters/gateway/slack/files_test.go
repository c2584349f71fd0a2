package slack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// dotPNG is a 1×1 PNG.
var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

// TestSharedImageIsDownloaded: a picture shared in a DM (a file_share
// message) is downloaded with the bot token from its private URL into the
// cache and reaches the gateway as a photo attachment beside the text; a
// file that is not an image, and a picture Slack does not hand over, are
// said in the text instead. No token reaches the events.
func TestSharedImageIsDownloaded(t *testing.T) {
	var auth []string
	p := startPeer(t, func(c slacktest.Customize) {
		c.Handle("/files-pri/T1-F1/dot.png", func(w http.ResponseWriter, r *http.Request) {
			auth = append(auth, r.Header.Get("Authorization"))
			if r.Header.Get("Authorization") != "Bearer "+botToken {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html><body>Sign in to Slack</body></html>"))
				return
			}
			_, _ = w.Write(dotPNG)
		})
		c.Handle("/files-pri/T1-F3/gone.png", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<!DOCTYPE html><html>sign in</html>"))
		})
	})
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: []llmtest.Reply{{Content: "A dot."}},
		Config: gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"slack": {alice}}}, TypingEvery: time.Hour}})
	cache := t.TempDir()
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: p.url(), HTTPClient: p.client(), PingInterval: time.Hour,
		CacheDir: cache, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", ad.Connected)
	base := strings.TrimSuffix(p.url(), "/api/")
	ts := p.ts()
	ev := map[string]any{"type": "message", "subtype": "file_share", "user": alice, "text": "what is this?", "ts": ts, "channel": dm, "channel_type": "im", "event_ts": ts,
		"files": []map[string]any{
			{"id": "F1", "name": "dot.png", "mimetype": "image/png", "size": len(dotPNG), "url_private_download": base + "/files-pri/T1-F1/dot.png"},
			{"id": "F2", "name": "notes.pdf", "mimetype": "application/pdf", "size": 1000, "url_private_download": base + "/files-pri/T1-F2/notes.pdf"},
			{"id": "F3", "name": "gone.png", "mimetype": "image/png", "size": 10, "url_private_download": base + "/files-pri/T1-F3/gone.png"},
		}}
	p.envelope("events_api", callback(ev))
	p.rec.waitPosts(t, dm, 1)
	var got schema.GatewayMessageReceived
	rs, err := rig.Store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Type == schema.TypeGatewayMessageReceived {
			if err := json.Unmarshal(r.Payload, &got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(got.Attachments) != 1 || got.Attachments[0].Kind != schema.AttachmentPhoto || got.Attachments[0].Name != "dot.png" {
		t.Fatalf("attachments %+v", got.Attachments)
	}
	if b, err := os.ReadFile(got.Attachments[0].Path); err != nil || !bytes.Equal(b, dotPNG) || !strings.HasPrefix(got.Attachments[0].Path, cache) {
		t.Fatalf("the downloaded file at %s: %v", got.Attachments[0].Path, err)
	}
	if !strings.Contains(got.Text, "what is this?") || !strings.Contains(got.Text, "notes.pdf, application/pdf") || !strings.Contains(got.Text, "only images are read") ||
		!strings.Contains(got.Text, "gone.png") || !strings.Contains(got.Text, "files:read") {
		t.Fatalf("text %q", got.Text)
	}
	if len(auth) != 1 || auth[0] != "Bearer "+botToken {
		t.Fatalf("the file was asked for with %q", auth)
	}
	if strings.Contains(gatewaytest.Payloads(t, rig.Store), "xoxb-") {
		t.Fatal("the bot token is in the events")
	}
}
