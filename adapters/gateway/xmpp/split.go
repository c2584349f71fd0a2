package xmpp

import gw "github.com/hermes-go/hermes/adapters/gateway"

// Split cuts text into message bodies of at most limit characters (runes),
// as gateway.Splitter cuts: at a paragraph break, a line break or a space
// that keeps at least half of the part, else between two runes. A fenced
// code block cut in two is closed at the end of one part and opened
// again, with its info string, at the start of the next, so that each
// message reads on its own. No backslash escapes: XMPP clients show the
// text as written.
func Split(text string, limit int) []string {
	return gw.Splitter{Limit: limit, Measure: gw.Runes, Fences: true}.Split(text)
}
