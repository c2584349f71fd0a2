package gateway

import (
	"path/filepath"
	"regexp"
	"strings"
)

// MediaSender is implemented by platforms that deliver a reply's
// MEDIA:<path> files themselves (Telegram sends them, the API server links
// them). To the others Served hands the reply with each tag replaced by a
// line saying which file Hermes made and that this platform does not carry
// it, never the raw tag (nor the file's full path).
type MediaSender interface {
	SendsMedia() bool
}

// mediaTag is MEDIA:<path> up to the end of a line, a closing quote,
// bracket or backtick (the convention of upstream's tools).
var mediaTag = regexp.MustCompile("MEDIA:([^\\n\"'`)\\]]+)")

// withoutMedia replaces the MEDIA: tags of text with a note naming each
// file.
func withoutMedia(text, platform string) string {
	if !strings.Contains(text, "MEDIA:") {
		return text
	}
	return mediaTag.ReplaceAllStringFunc(text, func(m string) string {
		p := strings.TrimRight(strings.TrimSpace(strings.TrimPrefix(m, "MEDIA:")), ".,;:!?")
		if p == "" {
			return m
		}
		return "[a file Hermes made, " + filepath.Base(p) + ", is not sent on " + platform + " yet]"
	})
}
