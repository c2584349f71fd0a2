package matrix

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
)

// An m.image is downloaded (authenticated media, with the bot's token)
// into the cache and handed on as a photo attachment, its caption as the
// text; an encrypted one is a note.
func TestImageMessage(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/_matrix/client/v1/media/download/example.org/dot":
			if r.Header.Get("Authorization") != "Bearer t" {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"errcode":"M_MISSING_TOKEN","error":"no token"}`))
				return
			}
			w.Header().Set("Content-Type", "image/png")
			w.Write(png)
		case strings.HasSuffix(r.URL.Path, "/joined_members"):
			w.Write([]byte(`{"joined":{"@alice:example.org":{},"@hermes:example.org":{}}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"errcode":"M_NOT_FOUND","error":"not here"}`))
		}
	}))
	defer hs.Close()
	cache := t.TempDir()
	a, err := New(Config{Homeserver: hs.URL, UserID: "@hermes:example.org", AccessToken: "t", CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(c *event.MessageEventContent) *event.Event {
		return &event.Event{Type: event.EventMessage, ID: "$img1", Sender: "@alice:example.org", Content: event.Content{Parsed: c}}
	}
	in, ok, err := a.inbound(context.Background(), "!r:example.org", msg(&event.MessageEventContent{MsgType: event.MsgImage,
		Body: "what is this?", FileName: "dot.png", URL: "mxc://example.org/dot", Info: &event.FileInfo{MimeType: "image/png", Size: len(png)}}))
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if len(in.Attachments) != 1 || in.Attachments[0].Kind != "photo" || in.Attachments[0].Name != "dot.png" || !strings.HasPrefix(in.Text, "what is this?") {
		t.Fatalf("inbound %+v", in)
	}
	if b, err := os.ReadFile(in.Attachments[0].Path); err != nil || !bytes.Equal(b, png) {
		t.Fatalf("the cached file: %v", err)
	}

	in, ok, err = a.inbound(context.Background(), "!r:example.org", msg(&event.MessageEventContent{MsgType: event.MsgImage,
		Body: "secret.png", File: &event.EncryptedFileInfo{URL: "mxc://example.org/enc"}}))
	if err != nil || !ok || len(in.Attachments) != 0 || !strings.Contains(in.Text, "encrypted picture (secret.png)") {
		t.Fatalf("encrypted: %+v %v %v", in, ok, err)
	}
	// Gone from the server: a note, not a retry forever.
	in, ok, err = a.inbound(context.Background(), "!r:example.org", msg(&event.MessageEventContent{MsgType: event.MsgImage,
		Body: "gone.png", URL: "mxc://example.org/gone"}))
	if err != nil || !ok || len(in.Attachments) != 0 || !strings.Contains(in.Text, "could not be downloaded") {
		t.Fatalf("gone: %+v %v %v", in, ok, err)
	}
}
