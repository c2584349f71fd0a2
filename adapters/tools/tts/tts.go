// Package tts is upstream's text_to_speech tool: the model has text spoken
// by the configured engine (tts: in config.yaml) and gets back the audio
// file's path as a MEDIA: tag, which the platforms deliver (Telegram as a
// voice note, elsewhere as an audio file) and the CLI shows as a path.
package tts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/voice"
)

// Tool is text_to_speech.
type Tool struct {
	// Speaker is the engine (tts.provider).
	Speaker voice.Speaker
	// Dir is where audio files are written ($HERMES_HOME/cache/audio:
	// the platforms send MEDIA: files from the cache only).
	Dir string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Spec implements tool.Tool, with upstream's name and parameters.
func (t Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "text_to_speech",
		Description: "Speak text aloud with the voice the user configured, as an audio file. The result's media_tag (MEDIA:<path>) " +
			"delivers the audio when you put it in your reply on its own line: a voice note on Telegram, an audio file elsewhere, " +
			"a saved file in the terminal. Use it when the user asks to hear the answer or for a voice message.",
		Parameters: map[string]any{"type": "object", "required": []string{"text"}, "properties": map[string]any{
			"text": map[string]any{"type": "string", "description": "The text to speak (plain words; Markdown is read without its marks; at most 4000 characters are spoken)."},
			"output_path": map[string]any{"type": "string", "description": "Optional file name for the audio (.ogg, .mp3 or .wav; default .ogg, a voice note). " +
				"It is written in Hermes' audio cache, whose path the result gives."},
		}}}
}

// Flags implements tool.Tool.
func (Tool) Flags() tool.Flags { return tool.Flags{} }

type args struct {
	Text       string `json:"text"`
	OutputPath string `json:"output_path"`
}

// Result is what the model gets back.
type Result struct {
	Success  bool   `json:"success"`
	FilePath string `json:"file_path"`
	MediaTag string `json:"media_tag"`
	Format   string `json:"format"`
	Bytes    int    `json:"bytes"`
}

// Run implements tool.Tool.
func (t Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("text_to_speech: bad arguments: %w", err)
	}
	text := voice.Speakable(a.Text)
	if text == "" {
		return "", fmt.Errorf("text_to_speech: text is empty")
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	name := "tts-" + now().UTC().Format("20060102-150405.000000")
	format := voice.Ogg
	if a.OutputPath != "" {
		base := filepath.Base(a.OutputPath)
		ext := filepath.Ext(base)
		f, err := voice.ParseFormat(ext)
		if err != nil || ext == "" {
			return "", fmt.Errorf("text_to_speech: output_path %q: name a .ogg, .mp3 or .wav file", a.OutputPath)
		}
		format, name = f, strings.TrimSuffix(base, ext)
	}
	audio, err := t.Speaker.Speak(ctx, text, format)
	if err != nil {
		return "", fmt.Errorf("text_to_speech: %w", err)
	}
	if err := os.MkdirAll(t.Dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(t.Dir, name+format.Ext())
	if err := os.WriteFile(path, audio, 0o600); err != nil {
		return "", err
	}
	out, _ := json.Marshal(Result{Success: true, FilePath: path, MediaTag: "MEDIA:" + path, Format: string(format), Bytes: len(audio)})
	return string(out), nil
}
