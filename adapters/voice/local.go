package voice

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The Debian packages each local engine needs.
const (
	pocketsphinxPackages = "pocketsphinx pocketsphinx-en-us ffmpeg"
	flitePackages        = "flite ffmpeg"
	espeakPackages       = "espeak-ng ffmpeg"
)

// Pocketsphinx is the local speech recogniser: CMU PocketSphinx's
// pocketsphinx_continuous with the US English model Debian's
// pocketsphinx-en-us ships, fed 16 kHz mono audio that ffmpeg converts the
// file to. It runs with no network; it recognises English only, and
// recognises clear speech well and noisy speech poorly.
type Pocketsphinx struct {
	// Model, when set, is a directory holding an acoustic model
	// (-hmm), a language model (<name>.lm.bin) and a dictionary
	// (<name>.dict) for another language; "" is the package's en-us.
	Model string
}

// Transcribe implements Transcriber.
func (p Pocketsphinx) Transcribe(ctx context.Context, path string) (string, error) {
	bin, err := lookPath("pocketsphinx_continuous", pocketsphinxPackages)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "hermes-stt-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	wav := filepath.Join(dir, "in.wav")
	if err := convert(ctx, path, wav, "-ar", "16000", "-ac", "1", "-sample_fmt", "s16", "-f", "wav"); err != nil {
		return "", err
	}
	args := []string{"-infile", wav, "-logfn", os.DevNull}
	if p.Model != "" {
		args = append(args, modelArgs(p.Model)...)
	}
	out, err := run(ctx, "", bin, args...)
	if err != nil {
		return "", err
	}
	var words []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	if len(words) == 0 {
		return "", ErrNoSpeech
	}
	return strings.Join(words, " "), nil
}

// modelArgs points pocketsphinx at the model files in dir: the acoustic
// model is the directory itself (or its one subdirectory), the language
// model and dictionary the files named so.
func modelArgs(dir string) []string {
	args := []string{"-hmm", dir}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			args[1] = p
		case strings.HasSuffix(e.Name(), ".lm.bin") && !strings.Contains(e.Name(), "phone"):
			args = append(args, "-lm", p)
		case strings.HasSuffix(e.Name(), ".dict"):
			args = append(args, "-dict", p)
		}
	}
	return args
}

// Flite is the local speech synthesiser: CMU Flite, whose voices are
// compiled into Debian's flite package (rms, slt, awb, kal), with ffmpeg
// encoding its WAV as Ogg/Opus or MP3.
type Flite struct {
	// Voice is a flite voice name; "" is rms.
	Voice string
}

// Speak implements Speaker.
func (f Flite) Speak(ctx context.Context, text string, format Format) ([]byte, error) {
	bin, err := lookPath("flite", flitePackages)
	if err != nil {
		return nil, err
	}
	voice := f.Voice
	if voice == "" {
		voice = "rms"
	}
	return synthesize(ctx, text, format, func(in, out string) []string {
		return []string{bin, "-voice", voice, "-f", in, "-o", out}
	})
}

// Espeak is the local speech synthesiser espeak-ng (Debian's espeak-ng,
// many languages, a robotic voice), with ffmpeg encoding its WAV.
type Espeak struct {
	// Voice is an espeak-ng voice (en-us, de, fr, …); "" is en-us.
	Voice string
}

// Speak implements Speaker.
func (e Espeak) Speak(ctx context.Context, text string, format Format) ([]byte, error) {
	bin, err := lookPath("espeak-ng", espeakPackages)
	if err != nil {
		return nil, err
	}
	voice := e.Voice
	if voice == "" {
		voice = "en-us"
	}
	return synthesize(ctx, text, format, func(in, out string) []string {
		return []string{bin, "-v", voice, "-f", in, "-w", out}
	})
}

// synthesize writes text to a file (never an argument: text that starts
// with a dash stays text), runs the synthesiser argv(in, out) to make a
// WAV, and encodes it as format.
func synthesize(ctx context.Context, text string, format Format, argv func(in, out string) []string) ([]byte, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("no text to speak")
	}
	dir, err := os.MkdirTemp("", "hermes-tts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, wav := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.wav")
	if err := os.WriteFile(in, []byte(text), 0o600); err != nil {
		return nil, err
	}
	a := argv(in, wav)
	if _, err := run(ctx, "", a[0], a[1:]...); err != nil {
		return nil, err
	}
	if format == WAV {
		return os.ReadFile(wav)
	}
	out := filepath.Join(dir, "out"+format.Ext())
	if err := convert(ctx, wav, out, encodeArgs(format)...); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// encodeArgs are ffmpeg's output options for format.
func encodeArgs(f Format) []string {
	switch f {
	case Ogg:
		return []string{"-c:a", "libopus", "-b:a", "32k", "-ar", "48000", "-ac", "1", "-f", "ogg"}
	case MP3:
		return []string{"-c:a", "libmp3lame", "-q:a", "5", "-f", "mp3"}
	}
	return []string{"-f", "wav"}
}

// Convert re-encodes the audio file in as out, in format; the local
// engines use it, and so do speakers whose service cannot produce format
// itself.
func Convert(ctx context.Context, in, out string, format Format) error {
	return convert(ctx, in, out, encodeArgs(format)...)
}

// convert runs ffmpeg from in to out with the output options opts.
func convert(ctx context.Context, in, out string, opts ...string) error {
	bin, err := lookPath("ffmpeg", "ffmpeg")
	if err != nil {
		return err
	}
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", in}, opts...)
	_, err = run(ctx, "", bin, append(args, out)...)
	return err
}
