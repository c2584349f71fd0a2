package apiserver_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// An answer naming a file of the media cache as MEDIA:<path> (what
// image_generate answers with) reaches an API client as a link it can
// fetch with its key; a file elsewhere stays a tag and is not served.
func TestAnswerMediaBecomesALink(t *testing.T) {
	media := t.TempDir()
	os.MkdirAll(filepath.Join(media, "images"), 0o700)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 40)...)
	img := filepath.Join(media, "images", "cat.png")
	os.WriteFile(img, png, 0o600)
	secret := filepath.Join(t.TempDir(), "secret.png")
	os.WriteFile(secret, []byte("secret"), 0o600)
	r := newRig(t, []llmtest.Reply{{Content: "Here:\nMEDIA:" + img + "\nand MEDIA:" + secret}, {Content: "Again MEDIA:" + img}},
		func(o *apiserver.Options) { o.MediaDir = media })
	resp, body := r.postJSON(t, "/v1/chat/completions", map[string]any{"model": "hermes", "messages": []any{map[string]any{"role": "user", "content": "draw a cat"}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `Here:\n![cat.png](/v1/media/images/cat.png)\nand MEDIA:`+secret) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, got := r.do(t, http.MethodGet, "/v1/media/images/cat.png", "", nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(got, png) || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("media %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	for _, p := range []string{"/v1/media/../" + filepath.Base(filepath.Dir(secret)) + "/secret.png", "/v1/media/images/none.png", "/v1/media/%2e%2e/x"} {
		if resp, _ := r.do(t, http.MethodGet, p, "", nil, nil); resp.StatusCode == 200 {
			t.Errorf("%s served", p)
		}
	}
	if resp, _ := r.do(t, http.MethodGet, "/v1/media/images/cat.png", "", nil, map[string]string{"Authorization": ""}); resp.StatusCode != 401 {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
	resp, body = r.postJSON(t, "/v1/responses", map[string]any{"model": "hermes", "input": "again"}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `Again ![cat.png](/v1/media/images/cat.png)`) {
		t.Fatalf("responses %d %s", resp.StatusCode, body)
	}
}
