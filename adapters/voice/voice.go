// Package voice turns speech into text and text into speech: a voice memo
// a person sends becomes its transcript for the model, and a reply can be
// spoken back as a voice note or an audio file.
//
// Two kinds of engine stand behind the Transcriber and Speaker ports: the
// OpenAI-compatible audio API (/v1/audio/transcriptions and
// /v1/audio/speech, through the official openai-go client), and local
// engines that run with no network from Debian packages that ship their
// own models (pocketsphinx with pocketsphinx-en-us for speech to text,
// flite or espeak-ng for text to speech, ffmpeg to convert between audio
// formats). A missing local engine is an error that names the packages to
// install.
package voice

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Transcriber turns the speech in an audio file into text.
type Transcriber interface {
	// Transcribe returns the words spoken in the audio file at path (any
	// format the engine or ffmpeg reads: Ogg/Opus voice notes, MP3, WAV,
	// M4A).
	Transcribe(ctx context.Context, path string) (string, error)
}

// Speaker turns text into speech.
type Speaker interface {
	// Speak returns text spoken, as audio in format.
	Speak(ctx context.Context, text string, format Format) ([]byte, error)
}

// Format is an audio container and codec a Speaker produces.
type Format string

// The formats speech is produced in: Ogg/Opus is what Telegram shows as a
// voice note; MP3 plays everywhere; WAV is uncompressed PCM.
const (
	Ogg Format = "ogg"
	MP3 Format = "mp3"
	WAV Format = "wav"
)

// Ext is the file name extension for f (".ogg").
func (f Format) Ext() string { return "." + string(f) }

// MediaType is f's MIME type.
func (f Format) MediaType() string {
	switch f {
	case Ogg:
		return "audio/ogg"
	case MP3:
		return "audio/mpeg"
	}
	return "audio/wav"
}

// ParseFormat reads a format name or a file name's extension (".oga" and
// ".opus" are Ogg); "" is MP3.
func ParseFormat(s string) (Format, error) {
	switch strings.TrimPrefix(strings.ToLower(s), ".") {
	case "ogg", "oga", "opus":
		return Ogg, nil
	case "mp3", "":
		return MP3, nil
	case "wav":
		return WAV, nil
	}
	return "", fmt.Errorf("audio format %q: want ogg, mp3 or wav", s)
}

// MissingError says a local engine's program is not installed, and what
// installs it.
type MissingError struct {
	// Program is the executable that was not found.
	Program string
	// Install is the command that installs it.
	Install string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s is not installed: install it with `%s`", e.Program, e.Install)
}

// ErrNoSpeech is returned when an audio file holds no words the engine
// recognised.
var ErrNoSpeech = errors.New("no speech recognised")

// lookPath finds program, or says which Debian packages provide it.
func lookPath(program, packages string) (string, error) {
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	return "", &MissingError{Program: program, Install: "apt-get install " + packages}
}

// run runs a program with no shell, its error carrying the program's
// last lines of stderr.
func run(ctx context.Context, stdin string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 400 {
			msg = "…" + msg[len(msg)-400:]
		}
		return nil, fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return out, nil
}
