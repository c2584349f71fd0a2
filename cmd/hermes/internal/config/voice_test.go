package config

import (
	"slices"
	"strings"
	"testing"
)

// Upstream's stt:, tts:, voice: and image_gen: keys mean the same here;
// what this build does not use (a Whisper model size for the local
// engine, edge's voice) is warned about, and an engine it lacks is
// replaced by the local one with a note naming the ones it has.
func TestSpeechKeys(t *testing.T) {
	clean(t)
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
	if r.ImageGen.Model != "gpt-image-1.5" || r.ImageGen.APIKey != "sk-env" {
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
		"image_gen:\n  provider: fal\n":      "image_gen.provider \"fal\"",
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
