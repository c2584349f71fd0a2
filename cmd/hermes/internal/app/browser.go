package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/tools/browser"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// browserVisionPrompt is what auxiliary.vision's model is told about a
// browser_vision screenshot.
const browserVisionPrompt = "You look at screenshots of web pages for an assistant that drives the browser but cannot see. " +
	"Answer its question about the screenshot precisely: quote text verbatim, name buttons, fields and their state, errors shown. " +
	"Do not guess at what is not visible."

// BrowserTools are the browser toolset's tools (none when no Chromium is
// installed): each session's browser runs in the
// session's sandbox when the terminal has one (sbs; else with env, the
// environment without Hermes' keys), its screenshots go
// to the home's blob store, and auxiliary.vision answers browser_vision.
func BrowserTools(home string, cfg config.Resolved, sbs *terminal.Sandboxes, env func() []string, log zerolog.Logger) ([]tool.Tool, error) {
	store := blobs.Open(home)
	bc := browser.Config{Screenshots: store, DownloadDir: filepath.Join(home, "cache", "browser"), Env: env, Log: log}
	if sbs != nil {
		bc.Sandboxes = sbs
	}
	if cfg.VisionModel != "" {
		prov, err := llm.New(cfg.VisionAux)
		if err != nil {
			return nil, fmt.Errorf("auxiliary.vision: %w", err)
		}
		bc.Vision = func(ctx context.Context, ref schema.ImageRef, question string) (string, error) {
			resp, err := prov.Complete(ctx, model.Request{Model: cfg.VisionModel, System: browserVisionPrompt, NoTools: true, MaxTokens: 1500, Blobs: store,
				Messages: []schema.Message{{Role: "user", Content: question, Images: []schema.ImageRef{ref}}}}, func(model.Delta) {})
			if err != nil {
				return "", fmt.Errorf("auxiliary.vision (%s): %w", cfg.VisionModel, err)
			}
			if env := tool.EnvFrom(ctx); env.Record != nil {
				if err := env.Record(ctx, model.AuxCall("vision", prov, cfg.VisionModel, resp, cfg.Prices)); err != nil {
					return "", err
				}
			}
			return resp.Content, nil
		}
	}
	_, ts, err := browser.Tools(bc)
	if err != nil {
		// No Chromium: the tools are not offered (`hermes tools list`
		// says what to install).
		log.Debug().Err(err).Msg("browser tools off")
		return nil, nil
	}
	return ts, nil
}
