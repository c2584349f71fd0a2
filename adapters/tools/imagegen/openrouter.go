package imagegen

import (
	"context"
	"errors"
	"fmt"
)

// openrouterModels are the default (upstream's first choice) and the
// model tried next when no model is configured and the first cannot be
// reached (an account without access to OpenAI's image models).
var openrouterModels = [2]string{"openai/gpt-5.4-image-2", "google/gemini-3-pro-image"}

// openrouter speaks OpenRouter's chat completions with image output
// (https://openrouter.ai/docs/features/multimodal/image-generation): the
// prompt as a user message with modalities ["image","text"] and
// image_config.aspect_ratio; the images come back as data URLs in
// choices[].message.images[].image_url.url. The key goes as a bearer
// token.
type openrouter struct {
	t *Tool
	// fallback: no model was configured, so the second default may be
	// tried.
	fallback bool
}

var openrouterRatios = [3]string{"16:9", "1:1", "9:16"}

func (o openrouter) generate(ctx context.Context, prompt, aspect string) (image, error) {
	models := []string{o.t.o.Model}
	if o.fallback && o.t.o.Model == openrouterModels[0] {
		models = append(models, openrouterModels[1])
	}
	var err error
	for i, m := range models {
		var img image
		img, err = o.one(ctx, m, prompt, aspect)
		if err == nil || i == len(models)-1 || ctx.Err() != nil {
			return img, err
		}
		var se *statusError
		if errors.As(err, &se) && se.status != 402 && se.status != 403 && se.status != 404 {
			return img, err
		}
	}
	return image{}, err
}

func (o openrouter) one(ctx context.Context, m, prompt, aspect string) (image, error) {
	t := o.t
	body := map[string]any{
		"model":        m,
		"modalities":   []string{"image", "text"},
		"messages":     []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}},
		"image_config": map[string]any{"aspect_ratio": openrouterRatios[aspectIndex[aspect]]},
	}
	var res struct {
		Choices []struct {
			Message struct {
				Content any `json:"content"`
				Images  []struct {
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"images"`
			} `json:"message"`
		} `json:"choices"`
	}
	out := image{model: m}
	if err := t.call(ctx, "POST", t.o.BaseURL+"/chat/completions", "Bearer "+t.o.APIKey, body, &res); err != nil {
		return out, err
	}
	var said string
	for _, c := range res.Choices {
		for _, im := range c.Message.Images {
			if im.ImageURL.URL != "" {
				out.url = im.ImageURL.URL
				return out, nil
			}
		}
		if s, ok := c.Message.Content.(string); ok && said == "" {
			said = s
		}
	}
	if said != "" {
		return out, fmt.Errorf("the answer has no image (does %s make images?); it said: %s", m, clip(said))
	}
	return out, fmt.Errorf("the answer has no image (does %s make images?)", m)
}
