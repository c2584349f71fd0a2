package xmpp

import (
	"strings"
	"unicode/utf8"
)

// Split cuts text into parts of at most limit characters (runes),
// preferring a paragraph break, then a line break, then a space, each only
// if it keeps at least half of the part, else cutting anywhere (between
// runes, never inside one). A cut inside a fenced code block (```) closes
// the fence at the end of the part and opens it again, with its info
// string, at the start of the next, so that each message reads on its own.
// The parts together hold all of the text's characters apart from the
// whitespace at the cuts.
func Split(text string, limit int) []string {
	if limit < 16 {
		limit = 16
	}
	s := strings.Trim(text, "\n")
	var parts []string
	reopen := ""
	for s != "" {
		if reopen != "" {
			s = reopen + "\n" + s
		}
		// Leave room for a closing fence.
		room := limit
		if utf8.RuneCountInString(s) <= room {
			if strings.TrimSpace(s) != "" {
				parts = append(parts, s)
			}
			break
		}
		room -= len("\n```")
		part, rest := cutAt(s, room)
		reopen = ""
		if opener, open := openFence(part); open && utf8.RuneCountInString(opener) < limit/4 {
			part = strings.TrimRight(part, "\n") + "\n```"
			reopen = opener
		}
		if strings.TrimSpace(part) != "" {
			parts = append(parts, strings.TrimRight(part, " \n"))
		}
		s = strings.TrimLeft(rest, "\n")
	}
	return parts
}

// cutAt returns s's first part of at most n runes, cut at the best break,
// and the rest after the break.
func cutAt(s string, n int) (string, string) {
	end := 0
	for i := 0; i < n && end < len(s); i++ {
		_, w := utf8.DecodeRuneInString(s[end:])
		end += w
	}
	window := s[:end]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > 0 && utf8.RuneCountInString(window[:i]) >= n/2 {
			return s[:i], s[i+len(sep):]
		}
	}
	return window, s[end:]
}

// openFence says whether text ends inside a fenced code block, and gives
// the line that opened it.
func openFence(text string) (string, bool) {
	opener := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		if opener == "" {
			opener = t
		} else if t == "```" {
			opener = ""
		}
	}
	return opener, opener != ""
}
