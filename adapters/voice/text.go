package voice

import (
	"regexp"
	"strings"
)

// MaxSpoken is the most characters of a reply spoken (the OpenAI speech
// API takes 4096; a longer answer is cut at a sentence end before it).
const MaxSpoken = 4000

var (
	fence      = regexp.MustCompile("(?s)```.*?```")
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	bareURL    = regexp.MustCompile(`https?://\S+`)
	mediaLine  = regexp.MustCompile(`MEDIA:\S+`)
	emphasis   = regexp.MustCompile("[*_`~]+")
	heading    = regexp.MustCompile(`(?m)^\s{0,3}(#{1,6}|>|[-*+]|\d+\.)\s+`)
	whitespace = regexp.MustCompile(`[ \t]+`)
)

// Speakable is a reply as it should be read aloud: code blocks, link
// targets, bare URLs and MEDIA: tags left out, Markdown marks dropped,
// cut to MaxSpoken.
func Speakable(text string) string {
	s := fence.ReplaceAllString(text, " ")
	s = mdLink.ReplaceAllString(s, "$1")
	s = bareURL.ReplaceAllString(s, "")
	s = mediaLine.ReplaceAllString(s, "")
	s = heading.ReplaceAllString(s, "")
	s = emphasis.ReplaceAllString(s, "")
	s = whitespace.ReplaceAllString(s, " ")
	s = strings.TrimSpace(s)
	if len(s) > MaxSpoken {
		cut := s[:MaxSpoken]
		if i := strings.LastIndexAny(cut, ".!?"); i > MaxSpoken/2 {
			cut = cut[:i+1]
		}
		s = cut
	}
	return s
}
