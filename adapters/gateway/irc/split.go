package irc

import (
	"strings"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// MaxLine is the most bytes an IRC line may have, "\r\n" included
// (RFC 1459 and 2812).
const MaxLine = 512

// Budget is the most bytes of text one PRIVMSG to target may carry so that
// the line the server relays to its recipients — ":" + self + " PRIVMSG "
// + target + " :" + text + "\r\n", where self is the sender's
// nick!user@host as the server knows it — stays within MaxLine.
func Budget(self, target string) int {
	return MaxLine - len(":"+self+" PRIVMSG "+target+" :\r\n")
}

// Split breaks text into message bodies of at most max bytes each: every
// line of text becomes one or more messages (IRC has no newlines inside a
// message), cut as gateway.Splitter cuts plain text in bytes — at the last
// space that leaves a piece at least half full, else at a rune boundary,
// never inside a UTF-8 sequence. Blank lines are dropped (IRC cannot send
// an empty message) and NUL, CR and LF never reach a message. Invalid
// UTF-8 is replaced.
func Split(text string, max int) []string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "\x00", "")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	sp := gw.Splitter{Limit: max, Measure: gw.Bytes}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		out = append(out, sp.Split(line)...)
	}
	return out
}
