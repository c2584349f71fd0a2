package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/tools/imagegen"
)

// Upstream's stt:, tts:, voice: and image_gen: keys mean the same here;
// what this build does not use (a Whisper model size for the local
// engine, edge's voice) is warned about, and an engine it lacks is
// replaced by the local one with a note naming the ones it has.
func TestSpeechKeys(t *testing.T) {
	clean(t)
	cleanImageKeys(t)
	t.Setenv("VOICE_TOOLS_OPENAI_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
	c, err := Load(homeWith(t, `model: gpt-4o-mini
stt:
  enabled: true
  provider: openai
  local:
    model: base
  openai:
    model: gpt-4o-mini-transcribe
tts:
  provider: openai
  edge:
    voice: en-US-AriaNeural
  openai:
    voice: nova
    api_key: sk-file
voice:
  auto_tts: true
image_gen:
  model: gpt-image-1.5
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Ignored(), []string{"stt.local.model", "tts.edge"}) {
		t.Fatalf("ignored %v", c.Ignored())
	}
	r, err := Resolve(t.TempDir(), c, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Speech
	if s.STTProvider != "openai" || s.STT.Model != "gpt-4o-mini-transcribe" || s.STT.APIKey != "sk-env" || s.STT.BaseURL != "http://127.0.0.1:9/v1" {
		t.Fatalf("stt %+v", s)
	}
	if s.TTSProvider != "openai" || s.TTS.Model != "gpt-4o-mini-tts" || s.TTS.Voice != "nova" || s.TTS.APIKey != "sk-file" || !s.AutoTTS {
		t.Fatalf("tts %+v", s)
	}
	if r.ImageGen.Provider != "openai" || r.ImageGen.Model != "gpt-image-1.5" || r.ImageGen.APIKey != "sk-env" {
		t.Fatalf("image_gen %+v", r.ImageGen)
	}

	// Defaults: the local engines.
	c, _ = Load(homeWith(t, "model: gpt-4o-mini\n"))
	if r, err = Resolve(t.TempDir(), c, Overrides{}); err != nil || r.Speech.STTProvider != "local" || r.Speech.TTSProvider != "flite" || r.Speech.AutoTTS {
		t.Fatalf("defaults %+v %v", r.Speech, err)
	}
	c, _ = Load(homeWith(t, "model: gpt-4o-mini\nstt:\n  enabled: false\n"))
	if r, err = Resolve(t.TempDir(), c, Overrides{}); err != nil || r.Speech.STTProvider != "" {
		t.Fatalf("disabled %+v %v", r.Speech, err)
	}
	// Upstream's providers this build lacks (edge is its default) are
	// not errors: the Python agent's config works, with a note.
	for yaml, want := range map[string]string{
		"stt:\n  provider: groq\n":           "stt.provider \"groq\" is not spoken by this build (it speaks local and openai): using local",
		"tts:\n  provider: edge\n":           "tts.provider \"edge\" is not spoken by this build (it speaks flite, espeak and openai): using flite",
		"stt:\n  local:\n    language: de\n": "recognises English only",
	} {
		c, err := Load(homeWith(t, "model: gpt-4o-mini\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(t.TempDir(), c, Overrides{})
		if err != nil || len(r.Speech.Notes) != 1 || !strings.Contains(r.Speech.Notes[0], want) || r.Speech.STTProvider != "local" || r.Speech.TTSProvider != "flite" {
			t.Errorf("%q: %+v %v", yaml, r.Speech, err)
		}
	}
}

// cleanImageKeys clears the variables image_gen: reads.
func cleanImageKeys(t *testing.T) {
	t.Helper()
	for _, p := range imagegen.Providers() {
		for _, k := range []string{p.KeyEnv, p.BaseURLEnv, p.ModelEnv} {
			if k != "" {
				t.Setenv(k, "")
			}
		}
	}
	t.Setenv("VOICE_TOOLS_OPENAI_KEY", "")
}

// image_gen.provider picks the service, with upstream's keys: the key
// from the provider's variable, the model from its variable, then
// image_gen.<provider>.model, then image_gen.model where it names one of
// the provider's models; base_url from image_gen.<provider>.base_url, then
// the provider's variable.
func TestImageGenKeys(t *testing.T) {
	clean(t)
	cleanImageKeys(t)
	resolve := func(yaml string) (ImageGen, []string) {
		// The speech notes stay the speech's: image_gen's is its own.
		t.Helper()
		c, err := Load(homeWith(t, "model: gpt-4o-mini\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(t.TempDir(), c, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Speech.Notes) != 0 {
			t.Fatalf("speech notes %v", r.Speech.Notes)
		}
		if r.ImageGen.Note != "" {
			return r.ImageGen, []string{r.ImageGen.Note}
		}
		return r.ImageGen, nil
	}
	// Nothing configured: openai, with no key (the tool says to set one).
	if g, notes := resolve(""); g != (ImageGen{Provider: "openai", Model: "gpt-image-1"}) || len(notes) != 0 {
		t.Fatalf("default %+v %v", g, notes)
	}
	// Only FAL_KEY: fal, upstream's default.
	t.Setenv("FAL_KEY", "fal-k")
	if g, _ := resolve(""); g != (ImageGen{Provider: "fal", APIKey: "fal-k"}) {
		t.Fatalf("fal by its key %+v", g)
	}
	if g, _ := resolve("image_gen:\n  model: fal-ai/flux-2-pro\n  fal:\n    base_url: http://127.0.0.1:9\n"); g != (ImageGen{Provider: "fal", APIKey: "fal-k",
		Model: "fal-ai/flux-2-pro", BaseURL: "http://127.0.0.1:9"}) {
		t.Fatalf("fal %+v", g)
	}
	t.Setenv("OPENAI_API_KEY", "sk-oa")
	if g, _ := resolve(""); g.Provider != "openai" || g.APIKey != "sk-oa" {
		t.Fatalf("openai key beats FAL_KEY without a provider: %+v", g)
	}
	if g, _ := resolve("image_gen:\n  provider: FAL\n  model: gpt-image-1.5\n"); g != (ImageGen{Provider: "fal", APIKey: "fal-k"}) {
		t.Fatalf("an OpenAI model in image_gen.model is not FAL's: %+v", g)
	}
	t.Setenv("FAL_IMAGE_MODEL", "fal-ai/qwen-image")
	if g, _ := resolve("image_gen:\n  provider: fal\n  fal:\n    model: fal-ai/z-image/turbo\n"); g.Model != "fal-ai/qwen-image" {
		t.Fatalf("FAL_IMAGE_MODEL %+v", g)
	}

	t.Setenv("OPENROUTER_API_KEY", "or-k")
	t.Setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:8/api/v1")
	if g, _ := resolve("image_gen:\n  provider: openrouter\n  model: google/gemini-3-pro-image\n"); g != (ImageGen{Provider: "openrouter", APIKey: "or-k",
		Model: "google/gemini-3-pro-image", BaseURL: "http://127.0.0.1:8/api/v1"}) {
		t.Fatalf("openrouter %+v", g)
	}
	t.Setenv("XAI_API_KEY", "xai-k")
	if g, _ := resolve("image_gen:\n  provider: xai\n  model: fal-ai/flux-2-pro\n  xai:\n    model: grok-imagine-image-quality\n    resolution: 2k\n"); g != (ImageGen{
		Provider: "xai", APIKey: "xai-k", Model: "grok-imagine-image-quality", Resolution: "2k"}) {
		t.Fatalf("xai %+v", g)
	}
	t.Setenv("DEEPINFRA_API_KEY", "di-k")
	t.Setenv("DEEPINFRA_IMAGE_MODEL", "black-forest-labs/FLUX-1-dev")
	if g, _ := resolve("image_gen:\n  provider: deepinfra\n  deepinfra:\n    model: x/y\n    base_url: http://127.0.0.1:7/v1/openai\n"); g != (ImageGen{
		Provider: "deepinfra", APIKey: "di-k", Model: "black-forest-labs/FLUX-1-dev", BaseURL: "http://127.0.0.1:7/v1/openai"}) {
		t.Fatalf("deepinfra %+v", g)
	}
	t.Setenv("KREA_API_KEY", "krea-k")
	if g, _ := resolve("image_gen:\n  provider: krea\n  model: krea-2-large\n"); g != (ImageGen{Provider: "krea", APIKey: "krea-k", Model: "krea-2-large"}) {
		t.Fatalf("krea %+v", g)
	}
	// Upstream's providers that need an account's sign-in: a note, and
	// the tool says the same; no other service is used instead.
	for _, name := range []string{"openai-codex", "nous"} {
		g, notes := resolve("image_gen:\n  provider: " + name + "\n")
		if g.Provider != name || g.Model != "" || g.APIKey != "" || len(notes) != 1 ||
			!strings.Contains(notes[0], "image_gen.provider \""+name+"\" is not spoken by this build (it speaks openai, fal, openrouter, xai, deepinfra, krea)") {
			t.Fatalf("%s: %+v %v", name, g, notes)
		}
	}
}
