package irc

import (
	"strings"

	"github.com/hermes-go/hermes/actors/command"
)

// fold lowers s by IRC's rfc1459 case mapping, under which "[]\~" are the
// upper case of "{}|^".
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == '[':
			return '{'
		case r == ']':
			return '}'
		case r == '\\':
			return '|'
		case r == '~':
			return '^'
		}
		return r
	}, s)
}

// equalFold compares two nicks or channel names as IRC does.
func equalFold(a, b string) bool { return fold(a) == fold(b) }

// match reports whether mask (with * and ? wildcards) matches s, both
// case-folded.
func match(mask, s string) bool {
	return wild(fold(mask), fold(s))
}

func wild(p, s string) bool {
	// Iterative glob with backtracking to the last star.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// UserID is the id under which a message from nick!user@host reaches the
// router: the first allow-list entry that matches it — a bare nick
// matches that nick, an entry with ! or @ is a mask (wildcards * and ?)
// matched against nick!user@host — or else nick!user@host itself (what a
// pairing records).
func UserID(allowed []string, nick, user, host string) string {
	full := nick + "!" + user + "@" + host
	for _, e := range allowed {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case strings.ContainsAny(e, "!@"):
			if match(e, full) {
				return e
			}
		case equalFold(e, nick):
			return e
		}
	}
	return full
}

// alias turns "!stop" into "/stop" for the gateway's commands, which IRC
// users type with "!" because their clients keep "/…" for themselves.
func alias(text string) string {
	if !strings.HasPrefix(text, "!") {
		return text
	}
	if cmd, _, ok := command.Gateway.Parse("/" + text[1:]); ok && cmd.ID != command.Unknown {
		return "/" + text[1:]
	}
	return text
}

// addressed reports whether a channel message is addressed to nick
// ("nick: …", "nick, …" or "@nick …") and returns it without the address.
func addressed(text, nick string) (bool, string) {
	t := strings.TrimPrefix(text, "@")
	if len(t) <= len(nick) || !equalFold(t[:len(nick)], nick) {
		return false, text
	}
	rest := t[len(nick):]
	switch {
	case rest[0] == ':' || rest[0] == ',':
		return true, strings.TrimSpace(rest[1:])
	case strings.HasPrefix(text, "@") && rest[0] == ' ':
		return true, strings.TrimSpace(rest)
	}
	return false, text
}

func isChannel(target string) bool {
	return target != "" && strings.ContainsRune("#&+!", rune(target[0]))
}
