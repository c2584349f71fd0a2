package voice

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/schema"
)

// IsAudio says whether an attachment is speech to transcribe: a voice
// note, an audio file, or a document whose type says audio.
func IsAudio(a schema.Attachment) bool {
	switch a.Kind {
	case schema.AttachmentVoice, schema.AttachmentAudio:
		return true
	case schema.AttachmentDocument:
		return strings.HasPrefix(a.MimeType, "audio/")
	}
	return false
}

// Transcripts transcribes the voice notes and audio files among a
// message's attachments (those downloaded: with a path) and returns a line
// for each, for the model: the transcript in quotes (as upstream passes
// it: a quoted line reads as what the person said, not as an instruction
// about voice), or a marker when it could not be transcribed, naming what
// to install when the engine is missing (other causes go to failed, when
// set, for the operator's log, and stay out of the conversation). A
// cancelled ctx is an error.
func Transcripts(ctx context.Context, tr Transcriber, atts []schema.Attachment, failed func(path string, err error)) ([]string, error) {
	var lines []string
	for _, a := range atts {
		if a.Path == "" || !IsAudio(a) {
			continue
		}
		text, err := tr.Transcribe(ctx, a.Path)
		var missing *MissingError
		switch {
		case err == nil:
			lines = append(lines, fmt.Sprintf("%q", text))
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &missing):
			lines = append(lines, fmt.Sprintf("[%s message could not be transcribed: %v]", a.Kind, missing))
		case errors.Is(err, ErrNoSpeech):
			lines = append(lines, fmt.Sprintf("[%s message: no speech recognised]", a.Kind))
		default:
			if failed != nil {
				failed(a.Path, err)
			}
			lines = append(lines, fmt.Sprintf("[%s message could not be transcribed]", a.Kind))
		}
	}
	return lines, nil
}
