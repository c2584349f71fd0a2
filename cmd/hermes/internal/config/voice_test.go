package config

import (
	"slices"
	"strings"
	"testing"
)

// Upstream's stt:, tts:, voice: and image_gen: keys mean the same here;
// what this build does not use (a Whisper model size for the local
// engine, edge's voice) is warned about, an engine it lacks is refused
// naming the ones it has.
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
	for yaml, want := range map[string]string{
		"stt:\n  provider: groq\n":           "stt.provider \"groq\": this build speaks local (pocketsphinx) and openai",
		"tts:\n  provider: edge\n":           "tts.provider \"edge\": this build speaks flite and espeak (local) and openai",
		"stt:\n  local:\n    language: de\n": "recognises English only",
		"image_gen:\n  provider: fal\n":      "image_gen.provider \"fal\"",
	} {
		c, err := Load(homeWith(t, "model: gpt-4o-mini\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(t.TempDir(), c, Overrides{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", yaml, err)
		}
	}
}
