// Package vision is upstream's vision_analyze tool: the model names an
// image (a file inside the allowed roots, an http(s) or data: URL, or an
// image already in the conversation by its sha256) and a question, and a
// vision model answers about it. The image is kept in the home's blob
// store (content-addressed, as the images people send are) before the
// vision model is asked, so the call's record can name it.
package vision

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// Describe asks a vision model question about the image ref: its answer,
// and the auxiliary call to record (nil: none).
type Describe func(ctx context.Context, ref schema.ImageRef, question string) (string, *schema.AuxiliaryCallCompleted, error)

// Tool is vision_analyze.
type Tool struct {
	// Blobs keeps the images.
	Blobs *blobs.Store
	// Readable resolves a local path inside the allowed roots
	// (files.Roots.Readable).
	Readable func(env *tool.Env, p string) (string, error)
	// Describe is the vision model: auxiliary.vision when set, else the
	// main model. Nil: no model here can see; the tool says what to set.
	Describe Describe
	// Client fetches http(s) images (nil: one with a 30 s timeout).
	Client *http.Client
}

// Spec implements tool.Tool with upstream's name and parameters.
func (t Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "vision_analyze",
		Description: "Look at an image and answer a question about it with a vision model: what it shows, the text in it, " +
			"the state of a user interface, a chart's values. image_url is an http(s) URL, a data: URL, a local file path, " +
			"or sha256:<hash> of an image already in this conversation. Use it whenever the user refers to an image you cannot see.",
		Parameters: map[string]any{"type": "object", "required": []string{"image_url", "question"}, "properties": map[string]any{
			"image_url": map[string]any{"type": "string", "description": "The image: http(s) URL, data: URL, local file path, or sha256:<hash>."},
			"question":  map[string]any{"type": "string", "description": "What you want to know about the image."},
		}}}
}

// Flags implements tool.Tool.
func (Tool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

type args struct {
	ImageURL string `json:"image_url"`
	Question string `json:"question"`
}

// Run implements tool.Tool.
func (t Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("vision_analyze: bad arguments: %w", err)
	}
	src := strings.TrimSpace(a.ImageURL)
	if src == "" {
		return "", errors.New("vision_analyze: image_url is empty")
	}
	if t.Describe == nil {
		return "", errors.New("vision_analyze: no vision model: the main model cannot see images and auxiliary.vision is not set " +
			"(set auxiliary.vision to a vision model in config.yaml, or model.supports_vision: true if the main model can see)")
	}
	ref, err := t.image(ctx, src)
	if err != nil {
		return "", fmt.Errorf("vision_analyze: %w", err)
	}
	q := strings.TrimSpace(a.Question)
	if q == "" {
		q = "Describe this image."
	}
	answer, call, err := t.Describe(ctx, ref, q)
	if call != nil {
		if env := tool.EnvFrom(ctx); env.Record != nil {
			if rerr := env.Record(ctx, *call); rerr != nil {
				return "", rerr
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("vision_analyze: %w", err)
	}
	out, _ := json.Marshal(map[string]any{"success": true, "image": map[string]any{"sha256": ref.SHA256, "media_type": ref.MediaType,
		"bytes": ref.Size, "name": ref.Name}, "analysis": answer})
	return string(out), nil
}

// image stores the image src names and returns its reference.
func (t Tool) image(ctx context.Context, src string) (schema.ImageRef, error) {
	low := strings.ToLower(src)
	switch {
	case strings.HasPrefix(low, "sha256:"):
		sum := strings.ToLower(strings.TrimPrefix(low, "sha256:"))
		if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
			return schema.ImageRef{}, fmt.Errorf("%q is not a sha256 hash", src)
		}
		if !t.Blobs.Has(sum) {
			return schema.ImageRef{}, fmt.Errorf("no image with sha256 %s in this home's blob store", sum)
		}
		data, err := t.Blobs.Get(ctx, sum)
		if err != nil {
			return schema.ImageRef{}, err
		}
		mt, err := blobs.CheckImage(data)
		if err != nil {
			return schema.ImageRef{}, err
		}
		return schema.ImageRef{SHA256: sum, MediaType: mt, Size: int64(len(data))}, nil
	case strings.HasPrefix(low, "data:"):
		meta, payload, ok := strings.Cut(src[5:], ",")
		if !ok || !strings.HasSuffix(strings.ToLower(meta), ";base64") {
			return schema.ImageRef{}, errors.New("a data: URL must be base64 (data:image/png;base64,...)")
		}
		if len(payload) > blobs.MaxImageBytes*4/3+4 {
			return schema.ImageRef{}, blobs.ErrTooLarge
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return schema.ImageRef{}, fmt.Errorf("data: URL: %w", err)
		}
		return t.Blobs.PutImage(ctx, data, "")
	case strings.HasPrefix(low, "http://"), strings.HasPrefix(low, "https://"):
		return t.fetch(ctx, src)
	}
	if t.Readable == nil {
		return schema.ImageRef{}, errors.New("local files are not readable here")
	}
	p, err := t.Readable(tool.EnvFrom(ctx), src)
	if err != nil {
		return schema.ImageRef{}, err
	}
	return t.Blobs.ReadImageFile(ctx, p)
}

// fetch downloads an image, refusing one over the limit before reading
// it whole.
func (t Tool) fetch(ctx context.Context, src string) (schema.ImageRef, error) {
	u, err := url.Parse(src)
	if err != nil {
		return schema.ImageRef{}, err
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return schema.ImageRef{}, err
	}
	req.Header.Set("Accept", "image/*")
	resp, err := client.Do(req)
	if err != nil {
		return schema.ImageRef{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return schema.ImageRef{}, fmt.Errorf("GET %s: HTTP %d", u.Redacted(), resp.StatusCode)
	}
	if resp.ContentLength > blobs.MaxImageBytes {
		return schema.ImageRef{}, blobs.ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, blobs.MaxImageBytes+1))
	if err != nil {
		return schema.ImageRef{}, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return t.Blobs.PutImage(ctx, data, path.Base(u.Path))
}
