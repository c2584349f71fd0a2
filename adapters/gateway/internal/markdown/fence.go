// Package markdown is the Markdown the platform adapters read alike: code
// fences and block markers (gateway.Splitter uses them to cut a long
// answer into messages).
// It is internal to adapters/gateway: what the platforms share lives here or
// in adapters/gateway itself, so that no platform imports another.
package markdown

import (
	"strings"
	"unicode/utf8"
)

// IsHeading reports whether s starts with an ATX heading marker.
func IsHeading(s string) bool {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && n < len(s) && s[n] == ' '
}

// IsBullet reports whether s starts with a list bullet.
func IsBullet(s string) bool {
	return len(s) > 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' '
}

// IsWord reports whether c is part of a word (ASCII letters and digits, or
// any byte of a multi-byte rune).
func IsWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf
}

// Run is the length of the run of c starting at i.
func Run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// Fence is an opening code fence line: ``` or ~~~ and an info string.
type Fence struct {
	Marker string // the run of ` or ~ that opens it
	Info   string // what follows the marker
}

// OpenFence reads line as the opening line of a fenced code block.
func OpenFence(line string) (Fence, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return Fence{}, false
	}
	n := Run(t, 0, t[0])
	if n < 3 {
		return Fence{}, false
	}
	info := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return Fence{}, false // an inline code span, not a fence
	}
	return Fence{Marker: t[:n], Info: info}, true
}

// Closes reports whether line closes the block f opens.
func (f Fence) Closes(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	t = strings.TrimRight(t, " \t")
	return len(t) >= len(f.Marker) && Run(t, 0, f.Marker[0]) == len(t)
}

// Lang is the info string's first word when it is a plausible language
// name ("" otherwise: it goes into an attribute).
func (f Fence) Lang() string {
	l, _, _ := strings.Cut(f.Info, " ")
	if l == "" || len(l) > 32 {
		return ""
	}
	for i := 0; i < len(l); i++ {
		if !IsWord(l[i]) && strings.IndexByte("+#.-_", l[i]) < 0 || l[i] >= utf8.RuneSelf {
			return ""
		}
	}
	return l
}
