package telegram_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/voice"
	"github.com/hermes-go/hermes/schema"
)

// needSpeech skips a test without the local speech engines, or fails it
// under CI (.ci/run installs them).
func needSpeech(t *testing.T) {
	t.Helper()
	for _, p := range []string{"flite", "pocketsphinx_continuous", "ffmpeg"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs flite, pocketsphinx, pocketsphinx-en-us and ffmpeg)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
}

// A voice memo reaches the model as its transcript (the local engines,
// flite speaking the memo and pocketsphinx hearing it, as the gateway
// wires them); with voice replies on, the answer comes back as a voice
// note that says the answer, and as text.
func TestFakeVoiceMemoInAndVoiceNoteOut(t *testing.T) {
	needSpeech(t)
	ctx := context.Background()
	memo, err := voice.Flite{}.Speak(ctx, "what time is it", voice.Ogg)
	if err != nil {
		t.Fatal(err)
	}
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	srv.AddFile("memo", "voice/file_7.oga", memo)
	cfg := allow("111")
	// What the gateway's wiring does (cmd/hermes/internal/app.WithTranscripts).
	cfg.Images = func(ctx context.Context, atts []schema.Attachment) ([]schema.ImageRef, []string, error) {
		lines, err := voice.Transcripts(ctx, voice.Pocketsphinx{}, atts, nil)
		return nil, lines, err
	}
	r := newRig(t, rigOptions{apiURL: srv.URL, tune: func(c *telegram.Config) {
		c.VoiceReplies = true
		c.Speak = func(ctx context.Context, text string) ([]byte, error) {
			return voice.Flite{}.Speak(ctx, text, voice.Ogg)
		}
	}}, cfg, llmtest.Reply{Content: "It is noon."})
	u := dmUpdate(alice, 9, "")
	m := u["message"].(map[string]any)
	delete(m, "text")
	m["voice"] = map[string]any{"file_id": "memo", "file_unique_id": "umemo", "duration": 2, "mime_type": "audio/ogg", "file_size": len(memo)}
	srv.Push(u)
	waitFor(t, "the reply to be delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })

	reqs := r.llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Raw), `\"what time is it\"`) {
		t.Fatalf("the model did not get the transcript: %s", reqs[0].Raw)
	}
	voices := srv.Calls("sendVoice")
	if len(voices) != 1 || voices[0].Params["chat_id"] != "111" {
		t.Fatalf("sendVoice calls %+v", voices)
	}
	note := voices[0].Files["voice"].Data
	if !bytes.HasPrefix(note, []byte("OggS")) {
		t.Fatalf("the voice note is not Ogg: % x", note[:min(len(note), 8)])
	}
	path := filepath.Join(t.TempDir(), "note.ogg")
	os.WriteFile(path, note, 0o600)
	if heard, err := (voice.Pocketsphinx{}).Transcribe(ctx, path); err != nil || heard != "it is noon" {
		t.Fatalf("the voice note says %q (%v)", heard, err)
	}
	if texts := srv.Calls("sendMessage"); len(texts) != 1 || texts[0].Params["text"] != "It is noon." {
		t.Fatalf("sendMessage %+v", texts)
	}
}

// Files a reply names as MEDIA:<path> go as a photo, a voice note or a
// document when they are under MediaRoots, and the tags leave the text; a
// path elsewhere is not sent and the text says so.
func TestFakeReplyMedia(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	root := t.TempDir()
	png := filepath.Join(root, "cat.png")
	os.WriteFile(png, append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 64)...), 0o600)
	ogg := filepath.Join(root, "hello.ogg")
	os.WriteFile(ogg, []byte("OggS voice"), 0o600)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("top secret"), 0o600)
	link := filepath.Join(root, "link.txt")
	os.Symlink(outside, link)
	answer := "Here is your cat:\nMEDIA:" + png + "\nand a greeting MEDIA:" + ogg + "\nMEDIA:" + outside + "\nMEDIA:" + link
	r := newRig(t, rigOptions{apiURL: srv.URL, tune: func(c *telegram.Config) { c.MediaRoots = []string{root} }},
		allow("111"), llmtest.Reply{Content: answer})
	srv.Push(dmUpdate(alice, 3, "draw me a cat"))
	waitFor(t, "the reply to be delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	if p := srv.Calls("sendPhoto"); len(p) != 1 || p[0].Files["photo"].Name != "cat.png" {
		t.Fatalf("sendPhoto %+v", p)
	}
	if v := srv.Calls("sendVoice"); len(v) != 1 || string(v[0].Files["voice"].Data) != "OggS voice" {
		t.Fatalf("sendVoice %+v", v)
	}
	if d := srv.Calls("sendDocument"); len(d) != 0 {
		t.Fatalf("a file outside the roots was sent: %+v", d)
	}
	texts := srv.Calls("sendMessage")
	if len(texts) != 1 {
		t.Fatalf("sendMessage %+v", texts)
	}
	text := texts[0].Params["text"].(string)
	if strings.Contains(text, "MEDIA:") || !strings.HasPrefix(text, "Here is your cat:\nand a greeting") ||
		!strings.Contains(text, "(secret.txt was not sent: ") || !strings.Contains(text, "(link.txt was not sent: ") || strings.Contains(text, "top secret") {
		t.Fatalf("text %q", text)
	}
}

// A voice reply that cannot be spoken (no engine) leaves the text reply
// as it was: the voice note is extra.
func TestFakeVoiceReplyFailureKeepsTheText(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	srv.AddFile("memo", "voice/file_8.oga", []byte("OggS memo"))
	r := newRig(t, rigOptions{apiURL: srv.URL, tune: func(c *telegram.Config) {
		c.VoiceReplies = true
		c.Speak = func(ctx context.Context, text string) ([]byte, error) {
			return nil, &voice.MissingError{Program: "flite", Install: "apt-get install flite ffmpeg"}
		}
	}}, allow("111"), llmtest.Reply{Content: "Heard you."})
	u := dmUpdate(alice, 11, "")
	m := u["message"].(map[string]any)
	delete(m, "text")
	m["voice"] = map[string]any{"file_id": "memo", "file_unique_id": "um8", "duration": 1, "mime_type": "audio/ogg", "file_size": 9}
	srv.Push(u)
	waitFor(t, "the reply to be delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	if v := srv.Calls("sendVoice"); len(v) != 0 {
		t.Fatalf("sendVoice %+v", v)
	}
	if texts := srv.Calls("sendMessage"); len(texts) != 1 || texts[0].Params["text"] != "Heard you." {
		t.Fatalf("sendMessage %+v", texts)
	}
}
