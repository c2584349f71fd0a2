package app

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/voice"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/schema"
)

// Transcriber is stt: resolved: the engine voice memos and audio files
// are transcribed with; nil when stt.enabled is false.
func Transcriber(cfg config.Resolved) voice.Transcriber {
	s := cfg.Speech
	switch s.STTProvider {
	case "local":
		return voice.Pocketsphinx{}
	case "openai":
		return voice.NewOpenAI(voice.OpenAIOptions{BaseURL: s.STT.BaseURL, APIKey: s.STT.APIKey, Model: s.STT.Model})
	}
	return nil
}

// Speaker is tts: resolved: the engine replies are spoken with.
func Speaker(cfg config.Resolved) voice.Speaker {
	s := cfg.Speech
	switch s.TTSProvider {
	case "openai":
		return voice.NewOpenAI(voice.OpenAIOptions{BaseURL: s.TTS.BaseURL, APIKey: s.TTS.APIKey, Model: s.TTS.Model, Voice: s.TTS.Voice})
	case "espeak":
		return voice.Espeak{Voice: s.TTS.Voice}
	}
	return voice.Flite{Voice: s.TTS.Voice}
}

// WithTranscripts is the gateway's Config.Images with speech to text
// added: images go through images, and each voice memo or audio file
// among the attachments adds its transcript to the lines the turn's text
// gets (tr nil: none).
func WithTranscripts(images func(context.Context, []schema.Attachment) ([]schema.ImageRef, []string, error), tr voice.Transcriber,
	log zerolog.Logger) func(context.Context, []schema.Attachment) ([]schema.ImageRef, []string, error) {
	if tr == nil {
		return images
	}
	return func(ctx context.Context, atts []schema.Attachment) ([]schema.ImageRef, []string, error) {
		refs, notes, err := images(ctx, atts)
		if err != nil {
			return nil, nil, err
		}
		lines, err := voice.Transcripts(ctx, tr, atts, func(path string, err error) {
			log.Warn().Err(err).Str("file", path).Msg("voice message not transcribed")
		})
		if err != nil {
			return nil, nil, err
		}
		return refs, append(notes, lines...), nil
	}
}
