package gateway_test

import (
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// mediaChat is a test chat platform that delivers MEDIA: files itself.
type mediaChat struct{ *gatewaytest.Chat }

func (mediaChat) SendsMedia() bool { return true }

// TestMediaTagsOnPlatformsWithoutMedia: a reply naming a file Hermes made
// (MEDIA:<path>, from image_generate or text_to_speech) reaches a platform
// that does not send files with the tag replaced by a note naming the file
// (not its path); a platform that sends files gets the tag as it is.
func TestMediaTagsOnPlatformsWithoutMedia(t *testing.T) {
	const answer = "Here is your picture:\nMEDIA:/home/me/.hermes/cache/images/cat-1.png\nEnjoy."
	for _, c := range []struct {
		name   string
		media  bool
		expect string
	}{
		{"plain", false, "Here is your picture:\n[a file Hermes made, cat-1.png, is not sent on plain yet]\nEnjoy."},
		{"mediachat", true, answer},
	} {
		t.Run(c.name, func(t *testing.T) {
			rig := gatewaytest.Start(t, gatewaytest.Options{Dir: t.TempDir(), Script: []llmtest.Reply{{Content: answer}},
				Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}})
			chat := gatewaytest.NewChat(c.name)
			if c.media {
				rig.Serve(mediaChat{chat}, nil)
			} else {
				rig.Serve(chat, nil)
			}
			<-chat.Ready()
			chat.Post(t, gatewaytest.DM("7", "m1", "draw a cat"))
			if got := chat.WaitReplies(t, 1)[0].Text; got != c.expect {
				t.Fatalf("reply %q, want %q", got, c.expect)
			}
		})
	}
}
