package imagegen

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// xai speaks xAI's images API (https://docs.x.ai/docs/guides/image-generations):
// POST {base}/images/generations with model, prompt, aspect_ratio and
// resolution (xAI takes no size), answered as the OpenAI images API is
// (data[].b64_json or data[].url; its URLs expire within minutes, so they
// are downloaded at once). The key goes as a bearer token.
type xai struct{ t *Tool }

var xaiRatios = [3]string{"16:9", "1:1", "9:16"}

func (x xai) generate(ctx context.Context, prompt, aspect string) (image, error) {
	t := x.t
	res := strings.ToLower(t.o.Resolution)
	if res != "2k" {
		res = "1k"
	}
	body := map[string]any{"model": t.o.Model, "prompt": prompt, "aspect_ratio": xaiRatios[aspectIndex[aspect]], "resolution": res}
	var ans struct {
		Data []struct {
			B64JSON       string `json:"b64_json"`
			URL           string `json:"url"`
			RevisedPrompt string `json:"revised_prompt"`
		} `json:"data"`
	}
	out := image{model: t.o.Model}
	if err := t.call(ctx, "POST", t.o.BaseURL+"/images/generations", "Bearer "+t.o.APIKey, body, &ans); err != nil {
		return out, err
	}
	if len(ans.Data) == 0 {
		return out, errors.New("the answer has no image")
	}
	d := ans.Data[0]
	out.url, out.revisedPrompt = d.URL, d.RevisedPrompt
	if d.B64JSON != "" {
		data, err := base64.StdEncoding.DecodeString(d.B64JSON)
		if err != nil {
			return out, fmt.Errorf("the image's base64: %w", err)
		}
		out.data = data
	}
	return out, nil
}
