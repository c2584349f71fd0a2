package slack

import (
	"unicode/utf8"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Parts turns a Markdown answer into the mrkdwn texts of the messages it
// becomes, each at most limit characters: the Markdown is cut (Split) and
// each piece converted; a piece whose escaping made it too long is cut
// again, smaller.
func Parts(md string, limit int) []string {
	var out []string
	var fit func(piece string, budget int)
	fit = func(piece string, budget int) {
		for _, p := range Split(piece, budget) {
			m := Mrkdwn(p)
			if utf8.RuneCountInString(m) <= limit || budget < 64 {
				out = append(out, m)
				continue
			}
			fit(p, budget*3/4)
		}
	}
	fit(md, limit)
	return out
}

// Split cuts Markdown into parts of at most limit characters (runes), as
// gateway.Splitter cuts: at a paragraph break, a line break or a space
// that keeps at least half of the part, else between two runes; a code
// block cut in two is closed at the end of one part and reopened at the
// start of the next. No backslash escapes: mrkdwn has none. Blank text
// gives no parts.
func Split(text string, limit int) []string {
	return gw.Splitter{Limit: limit, Measure: gw.Runes, Fences: true}.Split(text)
}
