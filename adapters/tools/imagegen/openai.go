package imagegen

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// openaiImages speaks the OpenAI-compatible images API: OpenAI's (dalle
// set, so that DALL·E's sizes and b64_json are asked for) and DeepInfra's
// (its model, when none is configured, is the first image model of its
// catalog).
type openaiImages struct {
	t      *Tool
	client openai.Client
	dalle  bool
}

func newOpenAIImages(t *Tool, base string, dalle bool) openaiImages {
	opts := []option.RequestOption{option.WithAPIKey(t.o.APIKey), option.WithMaxRetries(2), option.WithHTTPClient(t.http)}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base+"/"))
	}
	return openaiImages{t: t, client: openai.NewClient(opts...), dalle: dalle}
}

func (g openaiImages) generate(ctx context.Context, prompt, aspect string) (image, error) {
	m := g.t.o.Model
	if m == "" {
		var err error
		if m, err = g.t.deepinfraModel(ctx); err != nil {
			return image{}, err
		}
	}
	size := sizes[aspect]
	p := openai.ImageGenerateParams{Prompt: prompt, Model: openai.ImageModel(m), N: openai.Int(1)}
	if g.dalle && strings.HasPrefix(m, "dall-e") {
		// DALL·E answers with a URL unless asked for the bytes.
		p.ResponseFormat = openai.ImageGenerateParamsResponseFormatB64JSON
		size = dalleSizes[aspect]
	}
	p.Size = openai.ImageGenerateParamsSize(size)
	res, err := g.client.Images.Generate(ctx, p)
	if err != nil {
		var apierr *openai.Error
		if errors.As(err, &apierr) {
			err = &statusError{status: apierr.StatusCode, msg: clip(apierr.Message)}
		}
		return image{model: m}, err
	}
	if len(res.Data) == 0 {
		return image{model: m}, errors.New("the server sent no image")
	}
	img := res.Data[0]
	out := image{model: m, revisedPrompt: img.RevisedPrompt, url: img.URL}
	switch {
	case img.B64JSON != "":
		if out.data, err = base64.StdEncoding.DecodeString(img.B64JSON); err != nil {
			return out, fmt.Errorf("the image's base64: %w", err)
		}
	case img.URL == "":
		return out, errors.New("the server sent neither b64_json nor url")
	}
	return out, nil
}

// deepinfraModel is the first model DeepInfra's catalog tags image-gen
// (what upstream offers when image_gen.deepinfra.model is not set).
func (t *Tool) deepinfraModel(ctx context.Context) (string, error) {
	var cat struct {
		Data []struct {
			ID       string `json:"id"`
			Metadata *struct {
				Tags []string `json:"tags"`
			} `json:"metadata"`
		} `json:"data"`
	}
	q := url.Values{"filter": {"true"}, "sort_by": {"hermes"}}
	if err := t.call(ctx, "GET", t.o.BaseURL+"/models?"+q.Encode(), "Bearer "+t.o.APIKey, nil, &cat); err != nil {
		return "", fmt.Errorf("no model configured and DeepInfra's catalog did not answer (%w): set image_gen.deepinfra.model or DEEPINFRA_IMAGE_MODEL", err)
	}
	for _, m := range cat.Data {
		if m.Metadata != nil && m.ID != "" {
			for _, tag := range m.Metadata.Tags {
				if tag == "image-gen" {
					return m.ID, nil
				}
			}
		}
	}
	return "", errors.New("no model configured and DeepInfra's catalog lists no image-gen model: set image_gen.deepinfra.model or DEEPINFRA_IMAGE_MODEL")
}
