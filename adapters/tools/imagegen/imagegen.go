// Package imagegen is upstream's image_generate tool over the image
// services upstream's image_gen providers speak whose wire formats are
// published: the OpenAI-compatible images API (/v1/images/generations,
// through the official openai-go client: openai, and deepinfra at its own
// base URL), FAL's queue API (fal: submit, poll the status, fetch the
// result), OpenRouter's chat completions with image output (openrouter),
// xAI's images API (xai) and Krea's job API (krea). image_gen.provider
// picks one (Providers). The image is kept in the home's blob store
// (content-addressed) and copied into the media cache, and the tool answers
// with its path as a MEDIA: tag, which the platforms deliver (Telegram as a
// photo, the API server as an image link) and the CLI shows as a saved
// file.
package imagegen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events/blobs"
)

// Options configure the tool (image_gen: in config.yaml).
type Options struct {
	// Provider is image_gen.provider, one of Providers' names ("":
	// openai). Another name makes every call answer that it is not spoken.
	Provider string
	// BaseURL is the service's root ("": the provider's; OpenAI's and
	// DeepInfra's with /v1); APIKey its key.
	BaseURL, APIKey string
	// Model is the image model ("": the provider's default).
	Model string
	// Resolution is xAI's (1k or 2k; "": 1k).
	Resolution string
	// Blobs keeps the images; Dir is where a copy is written for the
	// platforms to send ($HERMES_HOME/cache/images).
	Blobs *blobs.Store
	Dir   string
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
	// Wait bounds one generation, a queued job's polling included (0:
	// five minutes); Poll is the first pause between polls (0: half a
	// second; it grows to five seconds).
	Wait, Poll time.Duration
}

// Tool is image_generate.
type Tool struct {
	o    Options
	p    Provider
	gen  generator
	err  error
	http *http.Client
}

// New returns the tool.
func New(o Options) *Tool {
	hc := o.HTTPClient
	if hc == nil {
		// Wait bounds every request: a slow model (OpenRouter's take
		// minutes) is not cut short by a per-request timeout.
		hc = &http.Client{}
	}
	t := &Tool{o: o, http: hc}
	p, ok := Lookup(o.Provider)
	if !ok {
		t.err = fmt.Errorf("image_gen.provider %q is not spoken by this build (it speaks %s): set image_gen.provider in config.yaml",
			o.Provider, strings.Join(Names(), ", "))
		return t
	}
	t.p = p
	if t.o.BaseURL == "" && p.Name != "openai" {
		// openai-go has OpenAI's; "" there with no key is refused below.
		t.o.BaseURL = p.BaseURL
	}
	t.o.BaseURL = strings.TrimRight(t.o.BaseURL, "/")
	if t.o.Model == "" {
		t.o.Model = p.Model
	}
	switch p.Name {
	case "openai":
		t.gen = newOpenAIImages(t, t.o.BaseURL, true)
	case "deepinfra":
		t.gen = newOpenAIImages(t, t.o.BaseURL, false)
	case "fal":
		t.gen = fal{t}
	case "openrouter":
		t.gen = openrouter{t, o.Model == ""}
	case "xai":
		t.gen = xai{t}
	case "krea":
		t.gen = krea{t}
	}
	return t
}

// sizes are upstream's aspect ratios as the images API's sizes.
var sizes = map[string]string{"landscape": "1536x1024", "square": "1024x1024", "portrait": "1024x1536"}

// dalleSizes are DALL·E 3's.
var dalleSizes = map[string]string{"landscape": "1792x1024", "square": "1024x1024", "portrait": "1024x1792"}

// Spec implements tool.Tool with upstream's name and parameters (text to
// image only: editing an image is not offered).
func (t *Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "image_generate",
		Description: "Generate an image from a text prompt with the image model the user configured. The result's media_tag " +
			"(MEDIA:<path>) delivers the image when you put it in your reply on its own line: a photo on Telegram, an image link " +
			"on the API server, a saved file in the terminal.",
		Parameters: map[string]any{"type": "object", "required": []string{"prompt"}, "properties": map[string]any{
			"prompt": map[string]any{"type": "string", "description": "A detailed description of the image to make."},
			"aspect_ratio": map[string]any{"type": "string", "enum": []string{"landscape", "square", "portrait"}, "default": "landscape",
				"description": "landscape is wide, portrait tall, square 1:1."},
		}}}
}

// Flags implements tool.Tool.
func (*Tool) Flags() tool.Flags { return tool.Flags{} }

type args struct {
	Prompt      string `json:"prompt"`
	AspectRatio string `json:"aspect_ratio"`
}

// Result is what the model gets back.
type Result struct {
	Success       bool   `json:"success"`
	Image         string `json:"image"`
	MediaTag      string `json:"media_tag"`
	SHA256        string `json:"sha256"`
	MediaType     string `json:"media_type"`
	Provider      string `json:"provider,omitempty"`
	Model         string `json:"model,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// Run implements tool.Tool. Nothing is written unless a whole image was
// received and checked.
func (t *Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("image_generate: bad arguments: %w", err)
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return "", errors.New("image_generate: prompt is empty")
	}
	if t.err != nil {
		return "", fmt.Errorf("image_generate: %w", t.err)
	}
	if t.o.APIKey == "" && (t.p.Name != "openai" || t.o.BaseURL == "") {
		if t.p.Name == "openai" {
			return "", errors.New("image_generate: no image API: set OPENAI_API_KEY (or image_gen.openai.api_key and base_url in config.yaml)")
		}
		return "", fmt.Errorf("image_generate: no %s key: set %s (in the environment or $HERMES_HOME/.env)", t.p.Name, t.p.KeyEnv)
	}
	aspect := a.AspectRatio
	if aspect == "" {
		aspect = "landscape"
	}
	if _, ok := sizes[aspect]; !ok {
		return "", fmt.Errorf("image_generate: aspect_ratio %q: use landscape, square or portrait", a.AspectRatio)
	}
	wait := t.o.Wait
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	gctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	img, err := t.gen.generate(gctx, a.Prompt, aspect)
	if img.model == "" {
		img.model = t.o.Model
	}
	if err == nil && img.data == nil {
		if img.url == "" {
			err = errors.New("the service sent no image")
		} else {
			img.data, err = t.fetch(gctx, img.url)
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%w: no image within %s", err, wait)
		}
		return "", fmt.Errorf("image_generate with %s: %w", t.label(img.model), t.hide(err))
	}
	ref, err := t.o.Blobs.PutImage(ctx, img.data, "")
	if err != nil {
		return "", fmt.Errorf("image_generate with %s: the service's image: %w", t.label(img.model), err)
	}
	ext := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}[ref.MediaType]
	path := filepath.Join(t.o.Dir, ref.SHA256[:16]+ext)
	if err := writeFile(t.o.Dir, path, img.data); err != nil {
		return "", fmt.Errorf("image_generate: %w", err)
	}
	out, _ := json.Marshal(Result{Success: true, Image: path, MediaTag: "MEDIA:" + path, SHA256: ref.SHA256, MediaType: ref.MediaType,
		Provider: t.p.Name, Model: img.model, RevisedPrompt: img.revisedPrompt})
	return string(out), nil
}

// label names the provider and, when known, the model.
func (t *Tool) label(model string) string {
	if model == "" {
		return t.p.Name
	}
	return t.p.Name + " (" + model + ")"
}

// writeFile writes the cache's copy whole or not at all.
func writeFile(dir, path string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
