package config

import (
	"fmt"
	"os"
	"strings"
)

// STTConfig is upstream's stt: section, speech to text for voice memos
// and audio files. provider local is this build's local engine
// (pocketsphinx, English) where upstream's is faster-whisper, so
// stt.local.model (a Whisper size) does not apply and is warned about.
type STTConfig struct {
	// Enabled (default true) transcribes voice memos for the model.
	Enabled *bool `yaml:"enabled"`
	// Provider is local (default) or openai (any OpenAI-compatible
	// /v1/audio/transcriptions).
	Provider string `yaml:"provider"`
	Local    struct {
		// Language: "" or en; the local engine recognises English.
		Language string `yaml:"language"`
	} `yaml:"local"`
	OpenAI OpenAIEndpoint `yaml:"openai"`
}

// TTSConfig is upstream's tts: section, text to speech. Providers here:
// flite (the default: local, upstream's default edge is a network service
// this build does not speak), espeak (local, espeak-ng) and openai.
type TTSConfig struct {
	Provider string         `yaml:"provider"`
	OpenAI   OpenAIEndpoint `yaml:"openai"`
	Flite    struct {
		Voice string `yaml:"voice"`
	} `yaml:"flite"`
	Espeak struct {
		Voice string `yaml:"voice"`
	} `yaml:"espeak"`
}

// OpenAIEndpoint is an OpenAI-compatible audio or images API (stt.openai,
// tts.openai, image_gen.openai): model, voice (speech only), and where: base_url and
// api_key, else OPENAI_BASE_URL and VOICE_TOOLS_OPENAI_KEY or
// OPENAI_API_KEY, as upstream.
type OpenAIEndpoint struct {
	Model   string `yaml:"model"`
	Voice   string `yaml:"voice"`
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
}

// Speech is stt:, tts: and voice: resolved.
type Speech struct {
	// STT is off when STTProvider is "".
	STTProvider string
	STT         OpenAIEndpoint
	// TTSProvider is flite, espeak or openai; TTS its settings (Voice
	// is the local engines' voice too).
	TTSProvider string
	TTS         OpenAIEndpoint
	// AutoTTS is voice.auto_tts: a voice memo's reply comes as a voice
	// note too.
	AutoTTS bool
	// Notes say which configured engines this build replaced (hermes
	// doctor shows them).
	Notes []string
}

// ImageGenConfig is image_gen: (upstream's section): image_generate's
// OpenAI-compatible images API.
type ImageGenConfig struct {
	// Provider is openai (the only one this build speaks; "" is openai).
	Provider string `yaml:"provider"`
	// Model is image_gen.model; image_gen.openai.model wins over it.
	Model  string         `yaml:"model"`
	OpenAI OpenAIEndpoint `yaml:"openai"`
}

// resolveImageGen reads image_gen: (a provider other than openai is
// noted, as resolveSpeech notes, and the OpenAI-compatible API used).
func resolveImageGen(c ImageGenConfig) (OpenAIEndpoint, string) {
	var note string
	if p := strings.ToLower(c.Provider); p != "" && p != "openai" {
		note = fmt.Sprintf("image_gen.provider %q is not spoken by this build: image_generate uses the OpenAI-compatible images API", c.Provider)
	}
	e := c.OpenAI
	if e.Model == "" {
		e.Model = c.Model
	}
	return openAIAudio(e, "gpt-image-1"), note
}

// resolveSpeech reads stt:, tts: and voice:. A provider of upstream's
// this build does not speak (its default tts.provider edge, say) is not an
// error, so that the Python agent's config.yaml works unchanged: the local
// engine stands in, and a note says so (hermes doctor shows it).
func resolveSpeech(c Config) Speech {
	var s Speech
	if c.STT.Enabled == nil || *c.STT.Enabled {
		switch p := strings.ToLower(c.STT.Provider); p {
		case "openai":
			s.STTProvider = p
			s.STT = openAIAudio(c.STT.OpenAI, "whisper-1")
		default:
			s.STTProvider = "local"
			if p != "" && p != "local" {
				s.Notes = append(s.Notes, fmt.Sprintf("stt.provider %q is not spoken by this build (it speaks local and openai): using local (pocketsphinx)", c.STT.Provider))
			}
			if l := strings.ToLower(c.STT.Local.Language); l != "" && l != "en" && !strings.HasPrefix(l, "en-") {
				s.Notes = append(s.Notes, fmt.Sprintf("stt.local.language %q: the local engine (pocketsphinx) recognises English only; set stt.provider: openai for other languages", c.STT.Local.Language))
			}
		}
	}
	switch p := strings.ToLower(c.TTS.Provider); p {
	case "espeak", "espeak-ng":
		s.TTSProvider, s.TTS.Voice = "espeak", c.TTS.Espeak.Voice
	case "openai":
		s.TTSProvider = p
		s.TTS = openAIAudio(c.TTS.OpenAI, "gpt-4o-mini-tts")
		if s.TTS.Voice == "" {
			s.TTS.Voice = "alloy"
		}
	default:
		s.TTSProvider, s.TTS.Voice = "flite", c.TTS.Flite.Voice
		if p != "" && p != "flite" && p != "local" {
			s.Notes = append(s.Notes, fmt.Sprintf("tts.provider %q is not spoken by this build (it speaks flite, espeak and openai): using flite", c.TTS.Provider))
		}
	}
	s.AutoTTS = c.Voice.AutoTTS
	return s
}

// openAIAudio fills an OpenAI endpoint's blanks from the environment and model.
func openAIAudio(e OpenAIEndpoint, model string) OpenAIEndpoint {
	if e.Model == "" {
		e.Model = model
	}
	if e.APIKey == "" {
		e.APIKey = first(os.Getenv("VOICE_TOOLS_OPENAI_KEY"), os.Getenv("OPENAI_API_KEY"))
	}
	if e.BaseURL == "" {
		e.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	return e
}
