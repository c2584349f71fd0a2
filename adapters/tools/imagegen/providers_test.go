package imagegen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/tools/imagegen"
	"github.com/hermes-go/hermes/adapters/tools/imagegen/imagegentest"
	"github.com/hermes-go/hermes/events/blobs"
)

const key = "sk-secret-5b1f0c"

// rig is a tool pointed at a stand-in, with its own home.
type rig struct {
	srv  *imagegentest.Server
	tool *imagegen.Tool
	home string
	dir  string
	bs   *blobs.Store
}

func newRig(t *testing.T, kind imagegentest.Kind, b imagegentest.Behaviour, o imagegen.Options) *rig {
	t.Helper()
	if b.Image == nil {
		b.Image = dotPNG
	}
	srv := imagegentest.New(kind, key, b)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	r := &rig{srv: srv, home: home, dir: filepath.Join(home, "cache", "images"), bs: blobs.Open(home)}
	o.Provider, o.BaseURL, o.Blobs, o.Dir = string(kind), srv.BaseURL(), r.bs, r.dir
	if o.APIKey == "" {
		o.APIKey = key
	}
	if o.APIKey == "-" {
		o.APIKey = ""
	}
	if o.Poll == 0 {
		o.Poll = 5 * time.Millisecond
	}
	r.tool = imagegen.New(o)
	return r
}

// files counts what the tool wrote: blobs and cache copies.
func (r *rig) files() int {
	n := 0
	filepath.Walk(r.home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

func (r *rig) run(t *testing.T, args string) (imagegen.Result, error) {
	t.Helper()
	out, err := r.tool.Run(context.Background(), json.RawMessage(args))
	var res imagegen.Result
	if err == nil {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("result %s: %v", out, err)
		}
	}
	return res, err
}

// Each provider, against a stand-in speaking its wire format: the request
// has the service's shape and auth header, the image is downloaded (from
// the CDN without the key) or decoded, stored content-addressed and named
// in a MEDIA: tag.
func TestProvidersGenerate(t *testing.T) {
	for _, tc := range []struct {
		kind  imagegentest.Kind
		model string
		paths []string
		check func(t *testing.T, reqs []imagegentest.Request)
		want  string // the model the result names
	}{
		{kind: imagegentest.FAL, want: "fal-ai/flux-2/klein/9b",
			paths: []string{"POST /fal-ai/flux-2/klein/9b", "GET /fal-ai/flux-2/requests/req-0001/status", "GET /fal-ai/flux-2/requests/req-0001/status",
				"GET /fal-ai/flux-2/requests/req-0001", "GET /files/req-0001.png"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				b := reqs[0].Body
				if b["prompt"] != "a black dot" || b["image_size"] != "square_hd" || b["num_inference_steps"] != 4.0 || b["output_format"] != "png" {
					t.Errorf("input %v", b)
				}
			}},
		{kind: imagegentest.FAL, model: "fal-ai/nano-banana-pro", want: "fal-ai/nano-banana-pro",
			paths: []string{"POST /fal-ai/nano-banana-pro", "GET /fal-ai/nano-banana-pro/requests/req-0001/status",
				"GET /fal-ai/nano-banana-pro/requests/req-0001/status", "GET /fal-ai/nano-banana-pro/requests/req-0001", "GET /files/req-0001.png"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				if b := reqs[0].Body; b["aspect_ratio"] != "1:1" || b["image_size"] != nil || b["resolution"] != "1K" {
					t.Errorf("input %v", b)
				}
			}},
		{kind: imagegentest.OpenRouter, want: "openai/gpt-5.4-image-2", paths: []string{"POST /api/v1/chat/completions"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				b := reqs[0].Body
				msgs, _ := json.Marshal(b["messages"])
				if b["model"] != "openai/gpt-5.4-image-2" || !slices.Equal(b["modalities"].([]any), []any{"image", "text"}) ||
					b["image_config"].(map[string]any)["aspect_ratio"] != "1:1" || string(msgs) != `[{"content":[{"text":"a black dot","type":"text"}],"role":"user"}]` {
					t.Errorf("body %v", b)
				}
			}},
		{kind: imagegentest.XAI, want: "grok-imagine-image", paths: []string{"POST /v1/images/generations", "GET /files/xai-tmp-req-0001.png"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				if b := reqs[0].Body; b["model"] != "grok-imagine-image" || b["aspect_ratio"] != "1:1" || b["resolution"] != "1k" || b["size"] != nil {
					t.Errorf("body %v", b)
				}
			}},
		{kind: imagegentest.DeepInfra, want: "black-forest-labs/FLUX-1-schnell", paths: []string{"GET /v1/openai/models", "POST /v1/openai/images/generations"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				if reqs[0].Query != "filter=true&sort_by=hermes" {
					t.Errorf("catalog query %q", reqs[0].Query)
				}
				if b := reqs[1].Body; b["model"] != "black-forest-labs/FLUX-1-schnell" || b["size"] != "1024x1024" || b["prompt"] != "a black dot" {
					t.Errorf("body %v", b)
				}
			}},
		{kind: imagegentest.DeepInfra, model: "stabilityai/sdxl-turbo", want: "stabilityai/sdxl-turbo", paths: []string{"POST /v1/openai/images/generations"}},
		{kind: imagegentest.Krea, want: "krea-2-medium", paths: []string{"POST /generate/image/krea/krea-2/medium", "GET /jobs/req-0001", "GET /jobs/req-0001", "GET /files/req-0001.png"},
			check: func(t *testing.T, reqs []imagegentest.Request) {
				if b := reqs[0].Body; b["aspect_ratio"] != "1:1" || b["prompt"] != "a black dot" || b["resolution"] != "1K" {
					t.Errorf("body %v", b)
				}
			}},
	} {
		t.Run(string(tc.kind)+"/"+tc.want, func(t *testing.T) {
			r := newRig(t, tc.kind, imagegentest.Behaviour{}, imagegen.Options{Model: tc.model})
			res, err := r.run(t, `{"prompt":"a black dot","aspect_ratio":"square"}`)
			if err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(res.Image); err != nil || !bytes.Equal(data, dotPNG) || filepath.Dir(res.Image) != r.dir || res.MediaTag != "MEDIA:"+res.Image ||
				res.MediaType != "image/png" || !r.bs.Has(res.SHA256) || res.Provider != string(tc.kind) || res.Model != tc.want {
				t.Fatalf("result %+v: %v", res, err)
			}
			reqs := r.srv.Requests()
			if got := r.srv.Paths(); !slices.Equal(got, tc.paths) {
				t.Fatalf("requests %q, want %q", got, tc.paths)
			}
			for _, q := range reqs {
				want := "Bearer " + key
				switch {
				case strings.HasPrefix(q.Path, "/files/"):
					want = "" // the CDN is not sent the key
				case tc.kind == imagegentest.FAL:
					want = "Key " + key
				}
				if q.Auth != want {
					t.Errorf("%s %s: Authorization %q, want %q", q.Method, q.Path, q.Auth, want)
				}
			}
			if tc.check != nil {
				tc.check(t, reqs)
			}
		})
	}
}

// OpenRouter's default model, when the account cannot reach it, gives way
// to the second default (upstream's chain); a configured model does not.
func TestOpenRouterFallback(t *testing.T) {
	r := newRig(t, imagegentest.OpenRouter, imagegentest.Behaviour{Reject: []string{"openai/gpt-5.4-image-2"}}, imagegen.Options{})
	if res, err := r.run(t, `{"prompt":"a dot"}`); err != nil || res.Model != "google/gemini-3-pro-image" {
		t.Fatalf("%+v %v", res, err)
	}
	if b := r.srv.Requests()[0].Body; b["image_config"].(map[string]any)["aspect_ratio"] != "16:9" {
		t.Errorf("default aspect %v", b)
	}
	r = newRig(t, imagegentest.OpenRouter, imagegentest.Behaviour{Reject: []string{"openai/gpt-5.4-image-2"}}, imagegen.Options{Model: "openai/gpt-5.4-image-2"})
	if _, err := r.run(t, `{"prompt":"a dot"}`); err == nil || !strings.Contains(err.Error(), "HTTP 404: No endpoints found for openai/gpt-5.4-image-2") {
		t.Fatalf("configured model: %v", err)
	}
}

// Every failure is a tool error saying what happened, with the service's
// own words where it gave some; nothing is written, and the key is in no
// error.
func TestProvidersFail(t *testing.T) {
	huge := append(append([]byte(nil), dotPNG...), make([]byte, blobs.MaxImageBytes)...)
	html := []byte("<html>an error page</html>")
	type tc struct {
		name string
		kind imagegentest.Kind
		b    imagegentest.Behaviour
		o    imagegen.Options
		want []string
		// paths, when set, must be among the requests (a cancelled job).
		paths []string
	}
	cases := []tc{
		{name: "fal job fails", kind: imagegentest.FAL, b: imagegentest.Behaviour{Fail: "CUDA out of memory"},
			want: []string{"FAL request req-0001 failed: HTTP 500: CUDA out of memory (runner_server_error)"}},
		{name: "fal polled past the wait", kind: imagegentest.FAL, b: imagegentest.Behaviour{Hang: true}, o: imagegen.Options{Wait: 150 * time.Millisecond},
			want: []string{"FAL request req-0001 was still IN_PROGRESS (cancelled it)", "no image within 150ms"}, paths: []string{"PUT /fal-ai/flux-2/requests/req-0001/cancel"}},
		{name: "krea polled past the wait", kind: imagegentest.Krea, b: imagegentest.Behaviour{Hang: true}, o: imagegen.Options{Wait: 150 * time.Millisecond},
			want: []string{"Krea job req-0001 was still processing", "no image within 150ms"}},
		{name: "openrouter past the wait", kind: imagegentest.OpenRouter, b: imagegentest.Behaviour{Hang: true}, o: imagegen.Options{Wait: 150 * time.Millisecond},
			want: []string{"no image within 150ms"}},
		{name: "krea job fails", kind: imagegentest.Krea, b: imagegentest.Behaviour{Fail: "prompt flagged by moderation"},
			want: []string{"Krea job req-0001 failed: prompt flagged by moderation"}},
		{name: "openrouter refuses", kind: imagegentest.OpenRouter, b: imagegentest.Behaviour{Fail: "Insufficient credits"},
			want: []string{"image_generate with openrouter (openai/gpt-5.4-image-2): HTTP 400: Insufficient credits"}},
		{name: "xai echoes the key", kind: imagegentest.XAI, b: imagegentest.Behaviour{Fail: "key " + key + " has no image access"},
			want: []string{"HTTP 400: key [key] has no image access"}},
		{name: "deepinfra refuses", kind: imagegentest.DeepInfra, b: imagegentest.Behaviour{Fail: "model not found"}, o: imagegen.Options{Model: "x/y"},
			want: []string{"image_generate with deepinfra (x/y): HTTP 400: model not found"}},
		{name: "fal no images", kind: imagegentest.FAL, b: imagegentest.Behaviour{NoImage: true}, want: []string{"FAL request req-0001 completed without an image"}},
		{name: "openrouter no images", kind: imagegentest.OpenRouter, b: imagegentest.Behaviour{NoImage: true},
			want: []string{"openrouter (google/gemini-3-pro-image): the answer has no image (does google/gemini-3-pro-image make images?); it said: I can only describe images."}},
		{name: "xai no images", kind: imagegentest.XAI, b: imagegentest.Behaviour{NoImage: true}, want: []string{"xai (grok-imagine-image): the answer has no image"}},
		{name: "deepinfra no images", kind: imagegentest.DeepInfra, b: imagegentest.Behaviour{NoImage: true}, want: []string{"the server sent no image"}},
		{name: "krea no images", kind: imagegentest.Krea, b: imagegentest.Behaviour{NoImage: true}, want: []string{"Krea job req-0001 completed without an image"}},
		{name: "fal oversized", kind: imagegentest.FAL, b: imagegentest.Behaviour{Image: huge}, want: []string{"image larger than 20 MiB"}},
		{name: "xai oversized", kind: imagegentest.XAI, b: imagegentest.Behaviour{Image: huge}, want: []string{"image larger than 20 MiB"}},
		{name: "fal not an image", kind: imagegentest.FAL, b: imagegentest.Behaviour{Image: html}, want: []string{"the service's image: not a PNG, JPEG, GIF or WebP image"}},
		{name: "openrouter not an image", kind: imagegentest.OpenRouter, b: imagegentest.Behaviour{Image: html}, want: []string{"not a PNG, JPEG, GIF or WebP image"}},
		{name: "krea unknown model", kind: imagegentest.Krea, o: imagegen.Options{Model: "krea-1"}, want: []string{`unknown Krea model "krea-1"`}},
	}
	// A wrong key: each service's 401 and what it says.
	for kind, said := range map[imagegentest.Kind]string{
		imagegentest.FAL:        "FAL refused the job: HTTP 401: Cannot access application",
		imagegentest.OpenRouter: "HTTP 401: No auth credentials found",
		imagegentest.XAI:        "HTTP 401: Incorrect API key provided",
		imagegentest.DeepInfra:  "DeepInfra's catalog did not answer (HTTP 401: Unauthorized: invalid or missing API token): set image_gen.deepinfra.model or DEEPINFRA_IMAGE_MODEL",
		imagegentest.Krea:       "Krea refused the job: HTTP 401: Invalid API token",
	} {
		cases = append(cases, tc{name: string(kind) + " 401", kind: kind, o: imagegen.Options{APIKey: "sk-wrong-key"}, want: []string{said}})
	}
	// No key: the variable to set.
	for kind, env := range map[imagegentest.Kind]string{imagegentest.FAL: "FAL_KEY", imagegentest.OpenRouter: "OPENROUTER_API_KEY",
		imagegentest.XAI: "XAI_API_KEY", imagegentest.DeepInfra: "DEEPINFRA_API_KEY", imagegentest.Krea: "KREA_API_KEY"} {
		cases = append(cases, tc{name: string(kind) + " no key", kind: kind, o: imagegen.Options{APIKey: "-"},
			want: []string{"image_generate: no " + string(kind) + " key: set " + env + " (in the environment or $HERMES_HOME/.env)"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.kind, c.b, c.o)
			_, err := r.run(t, `{"prompt":"a black dot"}`)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the key is in the error: %v", err)
			}
			if n := r.files(); n != 0 {
				t.Errorf("%d files written", n)
			}
			for _, p := range c.paths {
				if !slices.Contains(r.srv.Paths(), p) {
					t.Errorf("no %s among %q", p, r.srv.Paths())
				}
			}
		})
	}
}

// A queued job's status polls that fail for a while (a 503 while FAL
// reschedules) are waited through; a poll refused for good is not.
func TestPollsRideOutTransientFailures(t *testing.T) {
	for _, kind := range []imagegentest.Kind{imagegentest.FAL, imagegentest.Krea} {
		r := newRig(t, kind, imagegentest.Behaviour{Flaky: 3}, imagegen.Options{})
		if res, err := r.run(t, `{"prompt":"a dot"}`); err != nil || !r.bs.Has(res.SHA256) {
			t.Fatalf("%s: %+v %v", kind, res, err)
		}
		if n := len(r.srv.Paths()); n < 6 {
			t.Fatalf("%s: %d requests: %q", kind, n, r.srv.Paths())
		}
	}
}

// A provider this build does not speak is named, with the ones it does.
func TestUnknownProvider(t *testing.T) {
	tool := imagegen.New(imagegen.Options{Provider: "openai-codex", Blobs: blobs.Open(t.TempDir())})
	_, err := tool.Run(context.Background(), json.RawMessage(`{"prompt":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `image_gen.provider "openai-codex" is not spoken by this build (it speaks openai, fal, openrouter, xai, deepinfra, krea)`) {
		t.Fatal(err)
	}
	if p, ok := imagegen.Lookup("FAL"); !ok || p.KeyEnv != "FAL_KEY" || p.Model != "fal-ai/flux-2/klein/9b" {
		t.Fatalf("lookup %+v", p)
	}
}
