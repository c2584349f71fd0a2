package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/hermes-go/hermes/adapters/tools/imagegen"
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

// ImageGenConfig is image_gen: (upstream's section): the service
// image_generate uses and its settings.
type ImageGenConfig struct {
	// Provider is openai, fal, openrouter, xai, deepinfra or krea
	// (imagegen.Providers). "" is openai, or fal when FAL_KEY is set and
	// no OpenAI key or base URL is (upstream's default is fal).
	Provider string `yaml:"provider"`
	// Model is image_gen.model (the key upstream's model picker writes),
	// for openai, fal (owner/name), openrouter (owner/name) and krea
	// (krea-2-*); image_gen.<provider>.model wins over it.
	Model      string           `yaml:"model"`
	OpenAI     OpenAIEndpoint   `yaml:"openai"`
	FAL        ImageGenEndpoint `yaml:"fal"`
	OpenRouter ImageGenEndpoint `yaml:"openrouter"`
	XAI        ImageGenEndpoint `yaml:"xai"`
	DeepInfra  ImageGenEndpoint `yaml:"deepinfra"`
	Krea       ImageGenEndpoint `yaml:"krea"`
}

// ImageGenEndpoint is image_gen.<provider>: for fal, openrouter, xai,
// deepinfra and krea. Their keys come from the environment (or
// $HERMES_HOME/.env) only, as upstream: FAL_KEY, OPENROUTER_API_KEY,
// XAI_API_KEY, DEEPINFRA_API_KEY, KREA_API_KEY.
type ImageGenEndpoint struct {
	// Model is the image model; the provider's variable
	// (FAL_IMAGE_MODEL, OPENROUTER_IMAGE_MODEL, …) wins over it.
	Model string `yaml:"model"`
	// BaseURL points the provider somewhere else than its service, for
	// tests and proxies; the provider's variable (OPENROUTER_BASE_URL,
	// XAI_BASE_URL, DEEPINFRA_BASE_URL) is the fallback.
	BaseURL string `yaml:"base_url"`
	// Resolution is xAI's: 1k (default) or 2k.
	Resolution string `yaml:"resolution"`
}

// ImageGen is image_gen: resolved for image_generate. Provider is one
// imagegen speaks, or the configured name it does not (the tool then
// answers so, and Note says so for hermes doctor). Model "" is the
// provider's default.
type ImageGen struct {
	Provider                           string
	Model, BaseURL, APIKey, Resolution string
	Note                               string
}

// resolveImageGen reads image_gen:. A provider this build does not speak
// is not an error, so that the Python agent's config.yaml loads unchanged:
// a note says so (hermes doctor shows it) and image_generate answers with
// the same words rather than using another service.
func resolveImageGen(c ImageGenConfig) ImageGen {
	name := strings.ToLower(strings.TrimSpace(c.Provider))
	if name == "" {
		name = "openai"
		if oa := openAIAudio(c.OpenAI, ""); oa.APIKey == "" && oa.BaseURL == "" && os.Getenv("FAL_KEY") != "" {
			name = "fal"
		}
	}
	p, ok := imagegen.Lookup(name)
	if !ok {
		return ImageGen{Provider: c.Provider, Note: fmt.Sprintf("image_gen.provider %q is not spoken by this build (it speaks %s): image_generate will say so",
			c.Provider, strings.Join(imagegen.Names(), ", "))}
	}
	if p.Name == "openai" {
		e := c.OpenAI
		if e.Model == "" {
			e.Model = c.Model
		}
		e = openAIAudio(e, "gpt-image-1")
		return ImageGen{Provider: p.Name, Model: e.Model, BaseURL: e.BaseURL, APIKey: e.APIKey}
	}
	sec := map[string]ImageGenEndpoint{"fal": c.FAL, "openrouter": c.OpenRouter, "xai": c.XAI, "deepinfra": c.DeepInfra, "krea": c.Krea}[p.Name]
	getenv := func(name string) string {
		if name == "" {
			return ""
		}
		return strings.TrimSpace(os.Getenv(name))
	}
	g := ImageGen{Provider: p.Name, Model: first(getenv(p.ModelEnv), sec.Model), BaseURL: first(sec.BaseURL, getenv(p.BaseURLEnv)),
		APIKey: getenv(p.KeyEnv), Resolution: sec.Resolution}
	if g.Model == "" && c.Model != "" && p.TopModel(c.Model) {
		g.Model = c.Model
	}
	return g
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
