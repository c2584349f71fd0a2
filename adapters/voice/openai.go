package voice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// OpenAIOptions reach an OpenAI-compatible audio API.
type OpenAIOptions struct {
	// BaseURL is the API's root, with /v1 ("": OpenAI's).
	BaseURL string
	// APIKey is the bearer key (never logged).
	APIKey string
	// Model is the transcription or speech model.
	Model string
	// Voice is the speech voice (alloy, nova, …).
	Voice string
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
}

// OpenAI speaks the OpenAI audio API: /v1/audio/transcriptions for
// Transcribe, /v1/audio/speech for Speak.
type OpenAI struct {
	client openai.Client
	o      OpenAIOptions
}

// NewOpenAI returns a client of the audio API o names.
func NewOpenAI(o OpenAIOptions) *OpenAI {
	opts := []option.RequestOption{option.WithAPIKey(o.APIKey), option.WithMaxRetries(2)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(o.BaseURL, "/")+"/"))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &OpenAI{client: openai.NewClient(opts...), o: o}
}

// Transcribe implements Transcriber: the file is uploaded as it is (the
// API takes Ogg, MP3, WAV, M4A, WebM, FLAC).
func (c *OpenAI) Transcribe(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	model := c.o.Model
	if model == "" {
		model = "whisper-1"
	}
	name := filepath.Base(path)
	if strings.EqualFold(filepath.Ext(name), ".oga") {
		name = strings.TrimSuffix(name, filepath.Ext(name)) + ".ogg" // the API names Ogg so
	}
	res, err := c.client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File:  openai.File(f, name, audioType(name)),
		Model: openai.AudioModel(model),
	})
	if err != nil {
		return "", fmt.Errorf("transcribe with %s: %w", model, apiError(err))
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		return "", ErrNoSpeech
	}
	return text, nil
}

// Speak implements Speaker; Ogg is asked for as the API's "opus", which
// it sends in an Ogg container.
func (c *OpenAI) Speak(ctx context.Context, text string, format Format) ([]byte, error) {
	model, voice := c.o.Model, c.o.Voice
	if model == "" {
		model = "gpt-4o-mini-tts"
	}
	if voice == "" {
		voice = "alloy"
	}
	rf := openai.AudioSpeechNewParamsResponseFormatMP3
	switch format {
	case Ogg:
		rf = openai.AudioSpeechNewParamsResponseFormatOpus
	case WAV:
		rf = openai.AudioSpeechNewParamsResponseFormatWAV
	}
	resp, err := c.client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Input: text, Model: openai.SpeechModel(model), Voice: openai.AudioSpeechNewParamsVoice(voice), ResponseFormat: rf,
	})
	if err != nil {
		return nil, fmt.Errorf("speak with %s: %w", model, apiError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("speak with %s: %w", model, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("speak with %s: the server sent no audio", model)
	}
	return data, nil
}

// apiError keeps an API error's status and message, without the request
// dump (which would carry the key's header).
func apiError(err error) error {
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		msg := apierr.Message
		if msg == "" {
			msg = http.StatusText(apierr.StatusCode)
		}
		return fmt.Errorf("HTTP %d: %s", apierr.StatusCode, msg)
	}
	return err
}

func audioType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ogg", ".oga", ".opus":
		return "audio/ogg"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	case ".m4a":
		return "audio/mp4"
	case ".webm":
		return "audio/webm"
	case ".flac":
		return "audio/flac"
	}
	return "application/octet-stream"
}
