package voice_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/voice"
	"github.com/hermes-go/hermes/schema"
)

// need skips a test whose program is missing, or fails it under CI
// (.ci/run installs them).
func need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs flite, espeak-ng, pocketsphinx, pocketsphinx-en-us and ffmpeg)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
}

// sentences are spoken by flite and recognised by pocketsphinx: a real
// round trip through both local engines. Each must come back word for
// word, except where noted: the recogniser's known error on a sentence is
// allowed as that error only, nothing looser.
var sentences = []struct {
	text  string
	heard []string // what may come back (the text itself first)
}{
	{"the weather is nice today", []string{"the weather is nice today"}},
	{"please open the door", []string{"please open the door"}},
	{"what time is it", []string{"what time is it"}},
	// pocketsphinx's language model prefers the past tense here.
	{"the quick brown fox jumps over the lazy dog", []string{"the quick brown fox jumps over the lazy dog", "the quick brown fox jumped over the lazy dog"}},
}

func TestRoundTripFliteToPocketsphinx(t *testing.T) {
	need(t, "flite", "pocketsphinx_continuous", "ffmpeg")
	ctx := context.Background()
	dir := t.TempDir()
	// Every sentence as a voice note (Ogg/Opus), one as MP3 and as WAV.
	for _, format := range []voice.Format{voice.Ogg, voice.MP3, voice.WAV} {
		for i, s := range sentences {
			if format != voice.Ogg && i != 0 {
				continue
			}
			audio, err := voice.Flite{}.Speak(ctx, s.text, format)
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, audio, format)
			path := filepath.Join(dir, "memo"+format.Ext())
			if err := os.WriteFile(path, audio, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := voice.Pocketsphinx{}.Transcribe(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, h := range s.heard {
				ok = ok || got == h
			}
			if !ok {
				t.Errorf("%s: spoke %q, heard %q", format, s.text, got)
			}
		}
	}
}

func checkFormat(t *testing.T, audio []byte, f voice.Format) {
	t.Helper()
	var ok bool
	switch f {
	case voice.Ogg:
		ok = bytes.HasPrefix(audio, []byte("OggS")) && bytes.Contains(audio[:200], []byte("OpusHead"))
	case voice.MP3:
		ok = bytes.HasPrefix(audio, []byte("ID3")) || len(audio) > 2 && audio[0] == 0xff && audio[1]&0xe0 == 0xe0
	case voice.WAV:
		ok = bytes.HasPrefix(audio, []byte("RIFF")) && bytes.Equal(audio[8:12], []byte("WAVE"))
	}
	if !ok || len(audio) < 1000 {
		t.Fatalf("%d bytes are not %s audio: % x", len(audio), f, audio[:min(len(audio), 16)])
	}
}

func TestEspeakSpeaksOgg(t *testing.T) {
	need(t, "espeak-ng", "ffmpeg")
	audio, err := voice.Espeak{}.Speak(context.Background(), "hello from hermes", voice.Ogg)
	if err != nil {
		t.Fatal(err)
	}
	checkFormat(t, audio, voice.Ogg)
}

// Text that looks like an option is spoken, not taken as one.
func TestSpeakTextLikeAnOption(t *testing.T) {
	need(t, "flite", "ffmpeg")
	audio, err := voice.Flite{}.Speak(context.Background(), "-o /tmp/x --help", voice.WAV)
	if err != nil {
		t.Fatal(err)
	}
	checkFormat(t, audio, voice.WAV)
}

func TestSilenceIsNoSpeech(t *testing.T) {
	need(t, "pocketsphinx_continuous", "ffmpeg")
	path := filepath.Join(t.TempDir(), "silence.wav")
	if out, err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "2", path).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := (voice.Pocketsphinx{}).Transcribe(context.Background(), path); !errors.Is(err, voice.ErrNoSpeech) {
		t.Fatalf("silence: %v", err)
	}
}

func TestNotAudioFails(t *testing.T) {
	need(t, "pocketsphinx_continuous", "ffmpeg")
	path := filepath.Join(t.TempDir(), "memo.ogg")
	os.WriteFile(path, []byte("OggS but not really"), 0o600)
	_, err := voice.Pocketsphinx{}.Transcribe(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "ffmpeg") {
		t.Fatalf("got %v", err)
	}
}

// A missing engine says what to install, to the model's line too.
func TestMissingEngineSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := voice.Pocketsphinx{}.Transcribe(context.Background(), "x.ogg")
	var m *voice.MissingError
	if !errors.As(err, &m) || !strings.Contains(err.Error(), "apt-get install pocketsphinx pocketsphinx-en-us ffmpeg") {
		t.Fatalf("got %v", err)
	}
	if _, err := (voice.Flite{}).Speak(context.Background(), "hi", voice.Ogg); !strings.Contains(fmtErr(err), "apt-get install flite ffmpeg") {
		t.Fatalf("flite: %v", err)
	}
	lines, err := voice.Transcripts(context.Background(), voice.Pocketsphinx{}, []schema.Attachment{{Kind: schema.AttachmentVoice, Path: "/x/memo.oga"}}, nil)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "voice message could not be transcribed") || !strings.Contains(lines[0], "apt-get install pocketsphinx") {
		t.Fatalf("lines %q, %v", lines, err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestTranscriptsOfAttachments(t *testing.T) {
	need(t, "flite", "pocketsphinx_continuous", "ffmpeg")
	ctx := context.Background()
	dir := t.TempDir()
	audio, err := voice.Flite{}.Speak(ctx, "what time is it", voice.Ogg)
	if err != nil {
		t.Fatal(err)
	}
	memo := filepath.Join(dir, "memo.oga")
	os.WriteFile(memo, audio, 0o600)
	junk := filepath.Join(dir, "junk.ogg")
	os.WriteFile(junk, []byte("nope"), 0o600)
	var failed []string
	lines, err := voice.Transcripts(ctx, voice.Pocketsphinx{}, []schema.Attachment{
		{Kind: schema.AttachmentPhoto, Path: filepath.Join(dir, "p.jpg")},
		{Kind: schema.AttachmentVoice, Path: memo},
		{Kind: schema.AttachmentVoice}, // not downloaded
		{Kind: schema.AttachmentAudio, Path: junk},
	}, func(p string, err error) { failed = append(failed, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0] != `"what time is it"` || lines[1] != "[audio message could not be transcribed]" {
		t.Fatalf("lines %q", lines)
	}
	if len(failed) != 1 || failed[0] != junk {
		t.Fatalf("failed %q", failed)
	}
}

// BenchmarkPocketsphinx measures the local recogniser: seconds of speech
// transcribed per second of CPU (ffmpeg's conversion and pocketsphinx,
// the child processes' user and system time), over a 30-second memo.
func BenchmarkPocketsphinx(b *testing.B) {
	need(b, "flite", "pocketsphinx_continuous", "ffmpeg", "ffprobe")
	ctx := context.Background()
	var text []string
	for len(strings.Join(text, " ")) < 450 {
		for _, s := range sentences {
			text = append(text, s.text+".")
		}
	}
	audio, err := voice.Flite{}.Speak(ctx, strings.Join(text, " "), voice.Ogg)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "memo.ogg")
	os.WriteFile(path, audio, 0o600)
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path).Output()
	if err != nil {
		b.Fatal(err)
	}
	dur, err := time.ParseDuration(strings.TrimSpace(string(out)) + "s")
	if err != nil {
		b.Fatal(err)
	}
	before := childCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := (voice.Pocketsphinx{}).Transcribe(ctx, path); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := childCPU() - before
	b.ReportMetric(dur.Seconds(), "audio-s/op")
	b.ReportMetric(dur.Seconds()*float64(b.N)/cpu.Seconds(), "audio-s/cpu-s")
	b.ReportMetric(dur.Seconds()*float64(b.N)/b.Elapsed().Seconds(), "audio-s/wall-s")
}

func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
