package voice_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/voice"
)

// StartAimock runs @copilotkit/aimock, a third-party mock of the OpenAI
// API that parses the multipart transcription upload and the JSON speech
// request itself, with fixtures (.ci/run installs it and sets
// HERMES_AIMOCK).
func startAimock(t *testing.T, fixtures any) string {
	t.Helper()
	bin := os.Getenv("HERMES_AIMOCK")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HERMES_AIMOCK is not set: .ci/run installs @copilotkit/aimock and sets it")
		}
		t.Skip("HERMES_AIMOCK is not set: the aimock mock is not installed (.ci/run installs it)")
	}
	data, _ := json.Marshal(fixtures)
	f := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-p", fmt.Sprint(port), "-h", "127.0.0.1", "-f", f, "--strict")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
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
			t.Fatalf("aimock did not start: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

func journal(t *testing.T, url string) []map[string]any {
	t.Helper()
	resp, err := http.Get(url + "/__aimock/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("journal %s: %v", body, err)
	}
	return out
}

func TestOpenAIAgainstAimock(t *testing.T) {
	ogg := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{7}, 100)...)
	url := startAimock(t, map[string]any{"fixtures": []any{
		map[string]any{"match": map[string]any{"endpoint": "transcription", "model": "whisper-1"},
			"response": map[string]any{"transcription": map[string]any{"text": "remind me to buy milk"}}},
		map[string]any{"match": map[string]any{"endpoint": "speech", "userMessage": "Milk is on the list.", "model": "gpt-4o-mini-tts"},
			"response": map[string]any{"audio": base64.StdEncoding.EncodeToString(ogg), "format": "opus"}},
	}})
	ctx := context.Background()
	memo := filepath.Join(t.TempDir(), "memo.oga")
	os.WriteFile(memo, []byte("OggS a voice note"), 0o600)

	stt := voice.NewOpenAI(voice.OpenAIOptions{BaseURL: url + "/v1", APIKey: "sk-test", Model: "whisper-1"})
	text, err := stt.Transcribe(ctx, memo)
	if err != nil || text != "remind me to buy milk" {
		t.Fatalf("transcribe: %q, %v", text, err)
	}
	tts := voice.NewOpenAI(voice.OpenAIOptions{BaseURL: url + "/v1", APIKey: "sk-test", Voice: "nova"})
	audio, err := tts.Speak(ctx, "Milk is on the list.", voice.Ogg)
	if err != nil || !bytes.Equal(audio, ogg) {
		t.Fatalf("speak: %d bytes, %v", len(audio), err)
	}
	var paths []string
	for _, e := range journal(t, url) {
		paths = append(paths, fmt.Sprint(e["path"]))
	}
	if strings.Join(paths, " ") != "/v1/audio/transcriptions /v1/audio/speech" {
		t.Fatalf("requests %q", paths)
	}

	// A model the server does not have: the error names it and the
	// status, never the key.
	bad := voice.NewOpenAI(voice.OpenAIOptions{BaseURL: url + "/v1", APIKey: "sk-secret-key", Model: "gpt-4o-transcribe"})
	_, err = bad.Transcribe(ctx, memo)
	if err == nil || !strings.Contains(err.Error(), "gpt-4o-transcribe") || !strings.Contains(err.Error(), "HTTP 503") || strings.Contains(err.Error(), "sk-secret") {
		t.Fatalf("unknown model: %v", err)
	}
}
