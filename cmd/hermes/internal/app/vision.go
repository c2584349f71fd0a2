package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/schema"
)

// visionPrompt asks the auxiliary vision model for what upstream's
// vision_analyze gives the main model: a description it can work from.
const visionPrompt = "You describe images for an assistant that cannot see them. Describe this image fully and precisely: what it shows, " +
	"every piece of text in it verbatim, numbers, charts and their values, user-interface elements and their state, errors shown. " +
	"Do not guess at what is not visible."

// Sees says whether the main model takes images: model.supports_vision when set,
// else the catalog's answer; a model the catalog does not know is sent
// images (its API says so if it cannot take them).
func Sees(cfg config.Resolved) func(string) bool {
	return func(name string) bool {
		if cfg.Vision != nil {
			return *cfg.Vision
		}
		sees, known := catalog.Vision(name)
		return sees || !known
	}
}

// Describer is upstream's vision_analyze for a main model that cannot see:
// auxiliary.vision's model describes each image once (by its hash) and
// the call is recorded in the session. Nil when auxiliary.vision is not
// set.
func Describer(cfg config.Resolved, blobs model.Blobs) (func(context.Context, schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error), error) {
	if cfg.VisionModel == "" {
		return nil, nil
	}
	prov, err := llm.New(cfg.VisionAux)
	if err != nil {
		return nil, fmt.Errorf("auxiliary.vision: %w", err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	return func(ctx context.Context, ref schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error) {
		mu.Lock()
		d, ok := seen[ref.SHA256]
		mu.Unlock()
		if ok {
			return d, nil, nil
		}
		resp, err := prov.Complete(ctx, model.Request{Model: cfg.VisionModel, System: visionPrompt, NoTools: true, MaxTokens: 1500, Blobs: blobs,
			Messages: []schema.Message{{Role: "user", Content: "Describe this image.", Images: []schema.ImageRef{ref}}}}, func(model.Delta) {})
		if err != nil {
			return "", nil, fmt.Errorf("auxiliary.vision (%s): %w", cfg.VisionModel, err)
		}
		call := model.AuxCall("vision", prov, cfg.VisionModel, resp, cfg.Prices)
		mu.Lock()
		seen[ref.SHA256] = resp.Content
		mu.Unlock()
		return resp.Content, &call, nil
	}, nil
}
