package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/adapters/voice"
)

// What transcribes audio for a chat message: --audio FILE, and in a typed
// line an @path or a bare path of an existing audio file. Each file's
// words (stt: in config.yaml) are added to the message in quotes, as the
// gateway adds a voice memo's; the file itself is not sent.

// audioExts are the names a path must end with to be taken as audio.
var audioExts = []string{".ogg", ".oga", ".opus", ".mp3", ".wav", ".m4a", ".flac", ".webm"}

func hasAudioExt(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range audioExts {
		if ext == e {
			return true
		}
	}
	return false
}

// transcribeFiles transcribes each file; the first that fails fails them
// all (nothing is sent).
func transcribeFiles(ctx context.Context, tr voice.Transcriber, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if tr == nil {
		return nil, errors.New("--audio: speech to text is off (stt.enabled: false in config.yaml)")
	}
	var out []string
	for _, p := range paths {
		text, err := tr.Transcribe(ctx, expandHome(p))
		if err != nil {
			return nil, fmt.Errorf("--audio %s: %w (nothing was sent)", p, err)
		}
		out = append(out, fmt.Sprintf("%q", text))
	}
	return out, nil
}

// lineAudio transcribes the audio files a typed line names (@path, or a
// bare path of an existing file named like audio) and returns the line
// with their transcripts after it, and the transcripts alone (to show).
func lineAudio(ctx context.Context, tr voice.Transcriber, line string) (string, []string, error) {
	var paths []string
	for _, w := range strings.Fields(line) {
		p := strings.Trim(strings.TrimRight(strings.TrimPrefix(w, "@"), ",;:!?)\"'"), "\"'(")
		if p == "" || !hasAudioExt(p) {
			continue
		}
		if fi, err := os.Stat(expandHome(p)); err != nil || !fi.Mode().IsRegular() {
			continue // not a file here: words are words
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return line, nil, nil
	}
	heard, err := transcribeFiles(ctx, tr, paths)
	if err != nil {
		return "", nil, errors.New(strings.Replace(err.Error(), "--audio ", "", 1))
	}
	return line + "\n\n" + strings.Join(heard, "\n"), heard, nil
}
