// Package imagegen is upstream's image_generate tool over the
// OpenAI-compatible images API (/v1/images/generations, through the
// official openai-go client). The image is kept in the home's blob store
// (content-addressed) and copied into the media cache, and the tool
// answers with its path as a MEDIA: tag, which the platforms deliver
// (Telegram as a photo, the API server as an image link) and the CLI
// shows as a saved file.
package imagegen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events/blobs"
)

// Options configure the tool (image_gen: in config.yaml).
type Options struct {
	// BaseURL is the API's root with /v1 ("": OpenAI's); APIKey its key.
	BaseURL, APIKey string
	// Model is the image model (gpt-image-1, dall-e-3, …).
	Model string
	// Blobs keeps the images; Dir is where a copy is written for the
	// platforms to send ($HERMES_HOME/cache/images).
	Blobs *blobs.Store
	Dir   string
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
}

// Tool is image_generate.
type Tool struct {
	o      Options
	client openai.Client
	http   *http.Client
}

// New returns the tool.
func New(o Options) *Tool {
	opts := []option.RequestOption{option.WithAPIKey(o.APIKey), option.WithMaxRetries(2)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(o.BaseURL, "/")+"/"))
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	opts = append(opts, option.WithHTTPClient(hc))
	return &Tool{o: o, client: openai.NewClient(opts...), http: hc}
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
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// Run implements tool.Tool.
func (t *Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("image_generate: bad arguments: %w", err)
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return "", errors.New("image_generate: prompt is empty")
	}
	if t.o.APIKey == "" && t.o.BaseURL == "" {
		return "", errors.New("image_generate: no image API: set OPENAI_API_KEY (or image_gen.openai.api_key and base_url in config.yaml)")
	}
	aspect := a.AspectRatio
	if aspect == "" {
		aspect = "landscape"
	}
	size, ok := sizes[aspect]
	if !ok {
		return "", fmt.Errorf("image_generate: aspect_ratio %q: use landscape, square or portrait", a.AspectRatio)
	}
	p := openai.ImageGenerateParams{Prompt: a.Prompt, Model: openai.ImageModel(t.o.Model), N: openai.Int(1)}
	if strings.HasPrefix(t.o.Model, "dall-e") {
		// DALL·E answers with a URL unless asked for the bytes.
		p.ResponseFormat = openai.ImageGenerateParamsResponseFormatB64JSON
		size = dalleSizes[aspect]
	}
	p.Size = openai.ImageGenerateParamsSize(size)
	res, err := t.client.Images.Generate(ctx, p)
	if err != nil {
		var apierr *openai.Error
		if errors.As(err, &apierr) {
			err = fmt.Errorf("HTTP %d: %s", apierr.StatusCode, apierr.Message)
		}
		return "", fmt.Errorf("image_generate with %s: %w", t.o.Model, err)
	}
	if len(res.Data) == 0 {
		return "", fmt.Errorf("image_generate with %s: the server sent no image", t.o.Model)
	}
	img := res.Data[0]
	var data []byte
	switch {
	case img.B64JSON != "":
		if data, err = base64.StdEncoding.DecodeString(img.B64JSON); err != nil {
			return "", fmt.Errorf("image_generate: the image's base64: %w", err)
		}
	case img.URL != "":
		if data, err = t.fetch(ctx, img.URL); err != nil {
			return "", fmt.Errorf("image_generate: %w", err)
		}
	default:
		return "", fmt.Errorf("image_generate with %s: the server sent neither b64_json nor url", t.o.Model)
	}
	ref, err := t.o.Blobs.PutImage(ctx, data, "")
	if err != nil {
		return "", fmt.Errorf("image_generate: the server's image: %w", err)
	}
	if err := os.MkdirAll(t.o.Dir, 0o700); err != nil {
		return "", err
	}
	ext := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}[ref.MediaType]
	path := filepath.Join(t.o.Dir, ref.SHA256[:16]+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	out, _ := json.Marshal(Result{Success: true, Image: path, MediaTag: "MEDIA:" + path, SHA256: ref.SHA256, MediaType: ref.MediaType, RevisedPrompt: img.RevisedPrompt})
	return string(out), nil
}

// fetch downloads an image the API answered with a URL of.
func (t *Tool) fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download the image: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, blobs.MaxImageBytes+1))
	if err != nil {
		return nil, err
	}
	return data, nil
}
