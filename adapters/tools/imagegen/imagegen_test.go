package imagegen_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/tools/imagegen"
	"github.com/hermes-go/hermes/events/blobs"
)

// dotPNG is a real 1×1 PNG.
var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// startAimock runs @copilotkit/aimock, a third-party mock of the OpenAI
// API whose /v1/images/generations parses the request itself, with
// fixtures (.ci/run installs it and sets HERMES_AIMOCK).
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
	os.WriteFile(f, data, 0o600)
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

func TestImageGenerateAgainstAimock(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(dotPNG) }))
	defer web.Close()
	url := startAimock(t, map[string]any{"fixtures": []any{
		map[string]any{"match": map[string]any{"endpoint": "image", "userMessage": "a black dot", "model": "gpt-image-1"},
			"response": map[string]any{"image": map[string]any{"b64Json": base64.StdEncoding.EncodeToString(dotPNG), "revisedPrompt": "a single black dot"}}},
		map[string]any{"match": map[string]any{"endpoint": "image", "userMessage": "a dot by url", "model": "dall-e-2"},
			"response": map[string]any{"image": map[string]any{"url": web.URL + "/dot.png"}}},
		map[string]any{"match": map[string]any{"endpoint": "image", "userMessage": "garbage"},
			"response": map[string]any{"image": map[string]any{"b64Json": base64.StdEncoding.EncodeToString([]byte("<html>nope</html>"))}}},
	}})
	home := t.TempDir()
	bs := blobs.Open(home)
	dir := filepath.Join(home, "cache", "images")
	tool := imagegen.New(imagegen.Options{BaseURL: url + "/v1", APIKey: "sk-test", Model: "gpt-image-1", Blobs: bs, Dir: dir})
	out, err := tool.Run(context.Background(), json.RawMessage(`{"prompt":"a black dot","aspect_ratio":"square"}`))
	if err != nil {
		t.Fatal(err)
	}
	var r imagegen.Result
	json.Unmarshal([]byte(out), &r)
	if data, err := os.ReadFile(r.Image); err != nil || !bytes.Equal(data, dotPNG) || filepath.Dir(r.Image) != dir || r.MediaTag != "MEDIA:"+r.Image ||
		r.MediaType != "image/png" || r.RevisedPrompt != "a single black dot" || !bs.Has(r.SHA256) {
		t.Fatalf("result %+v: %v", r, err)
	}
	// What the server parsed: the model and the prompt, at the images path.
	resp, err := http.Get(url + "/__aimock/journal")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"path":"/v1/images/generations"`) || !strings.Contains(string(body), `"model":"gpt-image-1"`) {
		t.Fatalf("journal %s", body)
	}

	// An image the server gives by URL is downloaded.
	byURL := imagegen.New(imagegen.Options{BaseURL: url + "/v1", APIKey: "sk-test", Model: "dall-e-2", Blobs: bs, Dir: dir})
	if out, err = byURL.Run(context.Background(), json.RawMessage(`{"prompt":"a dot by url"}`)); err != nil || !strings.Contains(out, r.SHA256) {
		t.Fatalf("by url: %s %v", out, err)
	}
	for args, want := range map[string]string{
		`{"prompt":"garbage"}`:                        "not a PNG, JPEG, GIF or WebP image",
		`{"prompt":"unknown to the server"}`:          "HTTP 503",
		`{"prompt":"a black dot","aspect_ratio":"x"}`: "aspect_ratio \"x\"",
		`{"prompt":" "}`:                              "prompt is empty",
	} {
		if _, err := tool.Run(context.Background(), json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", args, err)
		}
	}
	none := imagegen.New(imagegen.Options{Model: "gpt-image-1", Blobs: bs, Dir: dir})
	if _, err := none.Run(context.Background(), json.RawMessage(`{"prompt":"x"}`)); err == nil || !strings.Contains(err.Error(), "set OPENAI_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
}
