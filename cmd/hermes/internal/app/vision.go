package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/tools/vision"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/schema"
)

// visionPrompt asks the auxiliary vision model for what upstream's
// vision_analyze gives the main model: a description it can work from.
const visionPrompt = "You look at images for an assistant that cannot see them. Answer the question about the image fully and precisely; " +
	"when asked to describe it, say what it shows, every piece of text in it verbatim, numbers, charts and their values, " +
	"user-interface elements and their state, errors shown. Do not guess at what is not visible."

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
	ask, err := visionModel(cfg, blobs, cfg.VisionAux, cfg.VisionModel)
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
		text, call, err := ask(ctx, ref, "Describe this image.")
		if err != nil {
			return "", nil, err
		}
		mu.Lock()
		seen[ref.SHA256] = text
		mu.Unlock()
		return text, call, nil
	}, nil
}

// Analyzer is the vision_analyze tool's model: auxiliary.vision when set,
// else the main model when it can see; nil when neither (the tool then
// says what to set).
func Analyzer(cfg config.Resolved, blobs model.Blobs) (vision.Describe, error) {
	if cfg.VisionModel != "" {
		ask, err := visionModel(cfg, blobs, cfg.VisionAux, cfg.VisionModel)
		if err != nil {
			return nil, fmt.Errorf("auxiliary.vision: %w", err)
		}
		return ask, nil
	}
	if cfg.Model == "" || !Sees(cfg)(cfg.Model) || llm.IsPlugin(cfg.LLM.Provider) {
		// A plugin's provider answers the chat only (set
		// auxiliary.vision for images).
		return nil, nil
	}
	return visionModel(cfg, blobs, cfg.LLM, cfg.Model)
}

// visionModel asks model, through the provider lc configures, a question
// about one image; the call is priced as an auxiliary one.
func visionModel(cfg config.Resolved, blobs model.Blobs, lc llm.Config, name string) (vision.Describe, error) {
	prov, err := llm.New(lc)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ref schema.ImageRef, question string) (string, *schema.AuxiliaryCallCompleted, error) {
		resp, err := prov.Complete(ctx, model.Request{Model: name, System: visionPrompt, NoTools: true, MaxTokens: 1500, Blobs: blobs,
			Messages: []schema.Message{{Role: "user", Content: question, Images: []schema.ImageRef{ref}}}}, func(model.Delta) {})
		if err != nil {
			return "", nil, fmt.Errorf("vision model %s: %w", name, err)
		}
		call := model.AuxCall("vision", prov, name, resp, cfg.Prices)
		return resp.Content, &call, nil
	}, nil
}
