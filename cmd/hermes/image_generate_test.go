package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/imagegen/imagegentest"
)

// startImageAimock runs @copilotkit/aimock (a third-party mock of the
// OpenAI API; .ci/run installs it and sets HERMES_AIMOCK) answering one
// image generation with dotPNG.
func startImageAimock(t *testing.T, prompt string) string {
	t.Helper()
	bin := os.Getenv("HERMES_AIMOCK")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HERMES_AIMOCK is not set: .ci/run installs @copilotkit/aimock and sets it")
		}
		t.Skip("HERMES_AIMOCK is not set")
	}
	fx, _ := json.Marshal(map[string]any{"fixtures": []any{map[string]any{"match": map[string]any{"endpoint": "image", "userMessage": prompt},
		"response": map[string]any{"image": map[string]any{"b64Json": base64.StdEncoding.EncodeToString(dotPNG)}}}}})
	f := filepath.Join(t.TempDir(), "fixtures.json")
	os.WriteFile(f, fx, 0o600)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-p", fmt.Sprint(port), "-h", "127.0.0.1", "-f", f, "--strict")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatal("aimock did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/v1", port)
}

var mediaTagRe = regexp.MustCompile(`MEDIA:/[^"\\]+`)

// TestTelegramImageGenerate: asked from Telegram, the model calls
// image_generate (the images API is aimock), passes the result's MEDIA:
// tag on in its answer, and the image reaches the chat as a photo, its
// text without the tag; the bytes are in the home's blob store.
func TestTelegramImageGenerate(t *testing.T) {
	images := startImageAimock(t, "a black dot")
	tg := telegramtest.NewServer(telegramtest.Token)
	defer tg.Close()
	srv := llmtest.New()
	defer srv.Close()
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		if tag := mediaTagRe.FindString(string(r.Raw)); tag != "" {
			return &llmtest.Reply{Content: "Here it is.\n" + tag}
		}
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "g", Name: "image_generate", Args: `{"prompt":"a black dot","aspect_ratio":"square"}`}}}
	})
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("image_gen:\n  openai:\n    base_url: "+images+"\n"), 0o600)
	env := chatEnv(srv, "TELEGRAM_BOT_TOKEN="+telegramtest.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS=111")
	g := startGateway(t, home, env)
	defer g.kill()
	tg.Push(map[string]any{"message": map[string]any{"message_id": 5, "date": time.Now().Unix(), "text": "draw a black dot",
		"from": map[string]any{"id": 111, "is_bot": false, "first_name": "Alice"}, "chat": map[string]any{"id": 111, "type": "private", "first_name": "Alice"}}})
	waitUntil(t, "the answer to be sent", func() bool { return len(tg.Calls("sendMessage")) > 0 })
	photos := tg.Calls("sendPhoto")
	if len(photos) != 1 || !bytes.Equal(photos[0].Files["photo"].Data, dotPNG) {
		t.Fatalf("photos %+v\n%s", photos, g.stderr.String())
	}
	if text := tg.Calls("sendMessage")[0].Params["text"]; text != "Here it is." {
		t.Fatalf("text %q", text)
	}
	n := 0
	filepath.Walk(filepath.Join(home, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && !strings.HasPrefix(fi.Name(), ".") {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("%d blobs", n)
	}
}

// TestTelegramImageGenerateFAL: with image_gen.provider: fal (its base URL
// a loopback stand-in speaking FAL's queue API, as image_gen.fal.base_url
// allows for tests and proxies), an image asked for from Telegram is
// submitted to the model's queue with FAL_KEY, polled, fetched and sent to
// the chat as a photo; the key is in no log line and no file of the home.
func TestTelegramImageGenerateFAL(t *testing.T) {
	const falKey = "fal-secret-3c9e71"
	fal := imagegentest.New(imagegentest.FAL, falKey, imagegentest.Behaviour{Image: dotPNG})
	defer fal.Close()
	tg := telegramtest.NewServer(telegramtest.Token)
	defer tg.Close()
	srv := llmtest.New()
	defer srv.Close()
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		if tag := mediaTagRe.FindString(string(r.Raw)); tag != "" {
			return &llmtest.Reply{Content: "Here it is.\n" + tag}
		}
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "g", Name: "image_generate", Args: `{"prompt":"a black dot","aspect_ratio":"portrait"}`}}}
	})
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("image_gen:\n  provider: fal\n  fal:\n    model: fal-ai/flux-2-pro\n    base_url: "+fal.URL+"\n"), 0o600)
	env := chatEnv(srv, "FAL_KEY="+falKey, "TELEGRAM_BOT_TOKEN="+telegramtest.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS=111")
	g := startGateway(t, home, env)
	defer g.kill()
	tg.Push(map[string]any{"message": map[string]any{"message_id": 5, "date": time.Now().Unix(), "text": "draw a black dot",
		"from": map[string]any{"id": 111, "is_bot": false, "first_name": "Alice"}, "chat": map[string]any{"id": 111, "type": "private", "first_name": "Alice"}}})
	waitUntil(t, "the answer to be sent", func() bool { return len(tg.Calls("sendMessage")) > 0 })
	photos := tg.Calls("sendPhoto")
	if len(photos) != 1 || !bytes.Equal(photos[0].Files["photo"].Data, dotPNG) {
		t.Fatalf("photos %+v\n%s", photos, g.stderr.String())
	}
	reqs := fal.Requests()
	if len(reqs) < 4 || reqs[0].Path != "/fal-ai/flux-2-pro" || reqs[0].Auth != "Key "+falKey || reqs[0].Body["image_size"] != "portrait_16_9" ||
		reqs[0].Body["prompt"] != "a black dot" || reqs[len(reqs)-1].Path != "/files/req-0001.png" || reqs[len(reqs)-1].Auth != "" {
		t.Fatalf("FAL saw %q %+v", fal.Paths(), reqs)
	}
	g.kill()
	if strings.Contains(g.stderr.String(), falKey) {
		t.Fatal("FAL_KEY is in the log")
	}
	filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(falKey)) {
				t.Errorf("FAL_KEY is in %s", p)
			}
		}
		return nil
	})
}

// TestChatImageGenerateNoKey: image_gen.provider: fal without FAL_KEY
// tells the model (and so the user) which variable to set.
func TestChatImageGenerateNoKey(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		if m := regexp.MustCompile(`no fal key: set FAL_KEY[^"\\]*`).FindString(string(r.Raw)); m != "" {
			return &llmtest.Reply{Content: "Cannot: " + m}
		}
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "g", Name: "image_generate", Args: `{"prompt":"a black dot"}`}}}
	})
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("image_gen:\n  provider: fal\n"), 0o600)
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "draw a black dot", "--model", "gpt-4o-mini")
	if code != 0 || !strings.Contains(out, "Cannot: no fal key: set FAL_KEY (in the environment or $HERMES_HOME/.env)") {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
}

// TestDoctorImage: doctor names image_generate's service and model, and
// the variable to set when its key is missing (never the key itself); a
// provider this build does not speak is named with the ones it does.
func TestDoctorImage(t *testing.T) {
	for _, tc := range []struct {
		yaml, env string
		want      []string
	}{
		{"image_gen:\n  provider: fal\n", "", []string{"fal (fal-ai/flux-2/klein/9b): FAL_KEY is not set", "export FAL_KEY=… (or put it in $HERMES_HOME/.env) to use image_generate"}},
		{"image_gen:\n  provider: xai\n  xai:\n    model: grok-imagine-image-quality\n", "XAI_API_KEY=xai-secret-77", []string{"xai (grok-imagine-image-quality)"}},
		{"image_gen:\n  provider: nous\n", "", []string{`image_gen.provider "nous" is not spoken by this build (it speaks openai, fal, openrouter, xai, deepinfra, krea)`,
			"set image_gen.provider to one of openai, fal"}},
	} {
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: gpt-4o-mini\n"+tc.yaml), 0o600)
		cmd := exec.Command(bin, "--home", home, "doctor", "--offline")
		cmd.Env = []string{"HOME=" + os.TempDir(), "PATH=" + os.Getenv("PATH"), tc.env}
		out, _ := cmd.CombinedOutput()
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%q: no %q in\n%s", tc.yaml, w, out)
			}
		}
		if strings.Contains(string(out), "xai-secret-77") || (tc.env != "" && strings.Contains(string(out), "XAI_API_KEY is not set")) {
			t.Errorf("%q: the key, or a wrong warning:\n%s", tc.yaml, out)
		}
	}
}
