package vision_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/files"
	"github.com/hermes-go/hermes/adapters/tools/vision"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// dotPNG is a real 1×1 PNG.
var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func TestVisionAnalyzeSources(t *testing.T) {
	home, wd, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "dot.png"), dotPNG, 0o600)
	os.WriteFile(filepath.Join(elsewhere, "dot.png"), dotPNG, 0o600)
	os.WriteFile(filepath.Join(wd, "notes.txt"), []byte("not an image"), 0o600)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dot.png" {
			w.Write(dotPNG)
			return
		}
		http.NotFound(w, r)
	}))
	defer web.Close()
	bs := blobs.Open(home)
	var asked []string
	var recorded []schema.Payload
	tl := vision.Tool{Blobs: bs, Readable: files.Roots{Home: home}.Readable,
		Describe: func(ctx context.Context, ref schema.ImageRef, q string) (string, *schema.AuxiliaryCallCompleted, error) {
			data, err := bs.ReadImage(ctx, ref)
			if err != nil || string(data) != string(dotPNG) {
				t.Errorf("the model would not get the image: %v", err)
			}
			asked = append(asked, q)
			return "A single dot.", &schema.AuxiliaryCallCompleted{Model: "vis"}, nil
		}}
	ctx := tool.WithEnv(context.Background(), &tool.Env{WorkingDir: wd, Record: func(_ context.Context, ps ...schema.Payload) error {
		recorded = append(recorded, ps...)
		return nil
	}})
	sum := strings.TrimSpace(mustPut(t, bs))
	for _, src := range []string{"dot.png", filepath.Join(wd, "dot.png"), web.URL + "/dot.png",
		"data:image/png;base64," + base64.StdEncoding.EncodeToString(dotPNG), "sha256:" + sum} {
		args, _ := json.Marshal(map[string]string{"image_url": src, "question": "what colour?"})
		out, err := tl.Run(ctx, args)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var r struct {
			Analysis string
			Image    struct{ SHA256 string }
		}
		json.Unmarshal([]byte(out), &r)
		if r.Analysis != "A single dot." || r.Image.SHA256 != sum {
			t.Fatalf("%s: %s", src, out)
		}
	}
	if len(asked) != 5 || asked[0] != "what colour?" || len(recorded) != 5 {
		t.Fatalf("asked %q, recorded %d", asked, len(recorded))
	}
	for src, want := range map[string]string{
		filepath.Join(elsewhere, "dot.png"):  "outside the allowed roots",
		"notes.txt":                          "not a PNG, JPEG, GIF or WebP image",
		web.URL + "/missing.png":             "HTTP 404",
		"sha256:" + strings.Repeat("ab", 32): "no image with sha256",
		"sha256:xyz":                         "is not a sha256 hash",
		"data:image/png,abc":                 "must be base64",
		filepath.Join(home, "config.yaml"):   "",
	} {
		if want == "" {
			os.WriteFile(src, []byte("api_key: sk-secret"), 0o600)
			want = "config.yaml"
		}
		args, _ := json.Marshal(map[string]string{"image_url": src, "question": "q"})
		if _, err := tl.Run(ctx, args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", src, err)
		}
	}
	if len(asked) != 5 {
		t.Fatalf("a refused image reached the model: %q", asked)
	}
}

func mustPut(t *testing.T, bs *blobs.Store) string {
	ref, err := bs.PutImage(context.Background(), dotPNG, "dot.png")
	if err != nil {
		t.Fatal(err)
	}
	return ref.SHA256
}

// With no model that can see, the tool says what to set.
func TestVisionAnalyzeNoModel(t *testing.T) {
	_, err := vision.Tool{Blobs: blobs.Open(t.TempDir())}.Run(context.Background(), json.RawMessage(`{"image_url":"x.png","question":"q"}`))
	if err == nil || !strings.Contains(err.Error(), "set auxiliary.vision") {
		t.Fatalf("got %v", err)
	}
}
