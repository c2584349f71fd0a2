package matrix_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/schema"
)

// A reply's MEDIA: files under MediaRoots are uploaded to the homeserver
// (Dendrite) and sent to the room as m.image after the text, which loses
// the tag; a file outside the roots is not sent and the text says so; a
// resent reply shows nothing twice.
func TestReplyFilesAreSent(t *testing.T) {
	w := newWorld(t)
	dm := w.alice.DM(t, w.bot.ID)
	w.bot.Join(t, dm)
	root := t.TempDir()
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	pic := filepath.Join(root, "sunset.png")
	if err := os.WriteFile(pic, png, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.png")
	os.WriteFile(secret, png, 0o644)
	bot := w.adapter(t, func(c *matrix.Config) { c.MediaRoots = []string{root} })
	if !bot.SendsMedia() {
		t.Fatal("an adapter with MediaRoots does not send media")
	}
	out := schema.Outbound{Kind: "reply", Platform: matrix.Platform, Chat: string(dm), ReplyID: "reply-m",
		Text: "Here is your picture.\nMEDIA:" + pic + "\nMEDIA:" + secret}
	ctx := context.Background()
	ids, err := bot.Send(ctx, out)
	if err != nil || len(ids) != 2 {
		t.Fatalf("send: %v %v", ids, err)
	}
	if again, err := bot.Send(ctx, out); err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("the resend made new events %v (first %v): %v", again, ids, err)
	}
	got, err := w.alice.From(ctx, dm, w.bot.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("alice sees %d messages, want 2: %v", len(got), err)
	}
	text, img := got[0].Content.AsMessage(), got[1].Content.AsMessage()
	if strings.Contains(text.Body, "MEDIA:") || !strings.Contains(text.Body, "Here is your picture.") || !strings.Contains(text.Body, "secret.png was not sent") {
		t.Fatalf("the text: %q", text.Body)
	}
	if img.MsgType != event.MsgImage || img.Body != "sunset.png" || img.Info == nil || img.Info.MimeType != "image/png" {
		t.Fatalf("the image event: %+v", img)
	}
	mxc, err := id.ParseContentURI(string(img.URL))
	if err != nil {
		t.Fatal(err)
	}
	data, err := w.alice.Client.DownloadBytes(ctx, mxc)
	if err != nil || !bytes.Equal(data, png) {
		t.Fatalf("the uploaded file: %v (%d bytes)", err, len(data))
	}
}
