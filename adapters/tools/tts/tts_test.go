package tts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/tools/tts"
	"github.com/hermes-go/hermes/adapters/voice"
)

func needFlite(t *testing.T) {
	t.Helper()
	for _, p := range []string{"flite", "ffmpeg"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs flite and ffmpeg)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
}

func TestTextToSpeech(t *testing.T) {
	needFlite(t)
	dir := filepath.Join(t.TempDir(), "cache", "audio")
	tool := tts.Tool{Speaker: voice.Flite{}, Dir: dir}
	out, err := tool.Run(context.Background(), json.RawMessage(`{"text":"**Hello** there"}`))
	if err != nil {
		t.Fatal(err)
	}
	var r tts.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(r.FilePath)
	if err != nil || !bytes.HasPrefix(data, []byte("OggS")) || filepath.Dir(r.FilePath) != dir || r.MediaTag != "MEDIA:"+r.FilePath || r.Format != "ogg" {
		t.Fatalf("result %+v: %v", r, err)
	}
	// output_path names the file; it stays in the cache whatever the path.
	out, err = tool.Run(context.Background(), json.RawMessage(`{"text":"hi","output_path":"../../../etc/greeting.mp3"}`))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(out), &r)
	if r.FilePath != filepath.Join(dir, "greeting.mp3") || r.Format != "mp3" {
		t.Fatalf("output_path: %+v", r)
	}
	for args, want := range map[string]string{
		`{"text":"  "}`:                        "text is empty",
		`{"text":"hi","output_path":"a.flac"}`: "name a .ogg, .mp3 or .wav file",
	} {
		if _, err := tool.Run(context.Background(), json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", args, err)
		}
	}
}

// With no engine installed the tool says what to install.
func TestTextToSpeechNoEngine(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := tts.Tool{Speaker: voice.Flite{}, Dir: t.TempDir()}.Run(context.Background(), json.RawMessage(`{"text":"hi"}`))
	if err == nil || !strings.Contains(err.Error(), "apt-get install flite ffmpeg") {
		t.Fatalf("got %v", err)
	}
}
