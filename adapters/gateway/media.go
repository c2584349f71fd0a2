package gateway

import (
	"fmt"
	"os"
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

// MediaTag is MEDIA:<path> up to the end of a line (paths may hold
// spaces), a closing quote, bracket or backtick: how upstream's tools
// (image_generate, text_to_speech) name a file for the reply to carry.
var MediaTag = regexp.MustCompile("MEDIA:([^\\n\"'`)\\]]+)")

// withoutMedia replaces the MEDIA: tags of text with a note naming each
// file.
func withoutMedia(text, platform string) string {
	if !strings.Contains(text, "MEDIA:") {
		return text
	}
	return MediaTag.ReplaceAllStringFunc(text, func(m string) string {
		p := strings.TrimRight(strings.TrimSpace(strings.TrimPrefix(m, "MEDIA:")), ".,;:!?")
		if p == "" {
			return m
		}
		return "[a file Hermes made, " + filepath.Base(p) + ", is not sent on " + platform + " yet]"
	})
}

// SplitMedia takes the MEDIA: tags out of text: the paths, and the text
// without them (lines left empty by a tag are dropped).
func SplitMedia(text string) (string, []string) {
	if !strings.Contains(text, "MEDIA:") {
		return text, nil
	}
	var paths []string
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "MEDIA:") {
			lines = append(lines, l)
			continue
		}
		l = MediaTag.ReplaceAllStringFunc(l, func(m string) string {
			p := strings.TrimRight(strings.TrimSpace(strings.TrimPrefix(m, "MEDIA:")), ".,;:!?")
			if p != "" {
				paths = append(paths, p)
			}
			return ""
		})
		if l = strings.TrimRight(l, " \t"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), paths
}

// AllowedMedia resolves p (links followed) and says whether it is a
// regular file under one of roots: a MEDIA: path the model wrote is not a
// way to read the host's files into a chat.
func AllowedMedia(roots []string, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", p)
	}
	for _, root := range roots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(r, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s is outside the directories files are sent from", p)
}
