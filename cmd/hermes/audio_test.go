package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/voice"
)

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

// TestChatAudio: chat --audio sends a voice memo's words (the local
// engine, stt's default) with -q's prompt, or as the prompt; an @memo.ogg
// in a typed line adds its words to the line; a file that is not audio
// sends nothing and says why.
func TestChatAudio(t *testing.T) {
	needSpeech(t)
	memo, err := voice.Flite{}.Speak(context.Background(), "please open the door", voice.Ogg)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(llmtest.Reply{Content: "Opening."}, llmtest.Reply{Content: "Done."}, llmtest.Reply{Content: "Again."})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "memo.ogg"), memo, 0o644)
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "do what the memo says", "--audio", "memo.ogg")
	if code != 0 || out != "Opening.\n" || !strings.Contains(errOut, `heard: "please open the door"`) {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	if !strings.Contains(string(srv.Requests()[0].Raw), `\"please open the door\"\n\ndo what the memo says`) {
		t.Fatalf("request %s", srv.Requests()[0].Raw)
	}
	out, errOut, code = hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "--audio", "memo.ogg")
	if code != 0 || out != "Done.\n" || !strings.Contains(string(srv.Requests()[1].Raw), `"content":"\"please open the door\""`) {
		t.Fatalf("exit %d %q %s\n%s", code, out, errOut, srv.Requests()[1].Raw)
	}
	out, errOut, code = hermesIn(t, wd, chatEnv(srv), "listen to @memo.ogg\n", "--home", home, "chat", "--model", "gpt-4o-mini")
	if code != 0 || !strings.Contains(out+errOut, "Again.") || !strings.Contains(string(srv.Requests()[2].Raw), `listen to @memo.ogg\n\n\"please open the door\"`) {
		t.Fatalf("exit %d %q %s\n%s", code, out, errOut, srv.Requests()[2].Raw)
	}
	os.WriteFile(filepath.Join(wd, "junk.ogg"), []byte("not audio"), 0o644)
	_, errOut, code = hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "--audio", "junk.ogg")
	if code == 0 || !strings.Contains(errOut, "--audio junk.ogg: ") || !strings.Contains(errOut, "nothing was sent") || len(srv.Requests()) != 3 {
		t.Fatalf("junk: exit %d %s", code, errOut)
	}
}

// TestTelegramVoiceMemoReachesTheModel: a voice memo sent to the bot
// (through the in-process Bot API fake: the telegram-test-api emulator
// has no files) reaches the model as its transcript, through the real
// gateway process and its default local engines; with voice.auto_tts the
// answer comes back as a voice note too.
func TestTelegramVoiceMemoReachesTheModel(t *testing.T) {
	needSpeech(t)
	memo, err := voice.Flite{}.Speak(context.Background(), "what time is it", voice.Ogg)
	if err != nil {
		t.Fatal(err)
	}
	tg := telegramtest.NewServer(telegramtest.Token)
	defer tg.Close()
	srv := llmtest.New(llmtest.Reply{Content: "It is noon."})
	defer srv.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("voice:\n  auto_tts: true\n"), 0o600)
	env := chatEnv(srv, "TELEGRAM_BOT_TOKEN="+telegramtest.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS=111")
	g := startGateway(t, home, env)
	defer g.kill()
	tg.AddFile("memo", "voice/file_3.oga", memo)
	tg.Push(map[string]any{"message": map[string]any{"message_id": 4, "date": time.Now().Unix(),
		"from": map[string]any{"id": 111, "is_bot": false, "first_name": "Alice"}, "chat": map[string]any{"id": 111, "type": "private", "first_name": "Alice"},
		"voice": map[string]any{"file_id": "memo", "file_unique_id": "um", "duration": 2, "mime_type": "audio/ogg", "file_size": len(memo)}}})
	waitUntil(t, "the answer to be sent", func() bool { return len(tg.Calls("sendMessage")) > 0 })
	if text := tg.Calls("sendMessage")[0].Params["text"]; text != "It is noon." {
		t.Fatalf("sent %v\n%s", text, g.stderr.String())
	}
	if raw := string(srv.Requests()[0].Raw); !strings.Contains(raw, `\"what time is it\"`) {
		t.Fatalf("the model did not get the transcript: %s", raw)
	}
	v := tg.Calls("sendVoice")
	if len(v) != 1 || !bytes.HasPrefix(v[0].Files["voice"].Data, []byte("OggS")) {
		t.Fatalf("voice notes %+v\n%s", v, g.stderr.String())
	}
}

// TestDoctorVoice: doctor names the speech engines in use, and says what
// to install when a local engine's program is missing; upstream's default
// tts.provider (edge, a network service) is replaced by flite with a note,
// not refused.
func TestDoctorVoice(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: gpt-4o-mini\ntts:\n  provider: edge\n"), 0o600)
	cmd := exec.Command(bin, "--home", home, "doctor", "--offline")
	cmd.Env = []string{"HOME=" + os.TempDir(), "PATH=" + t.TempDir()}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "speech to text: local, text to speech: flite") || !strings.Contains(string(out), `tts.provider "edge" is not spoken by this build`) ||
		!strings.Contains(string(out), "apt-get install ffmpeg flite pocketsphinx pocketsphinx-en-us") {
		t.Fatalf("doctor:\n%s", out)
	}
}
