package gateway

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hermes-go/hermes/adapters/gateway/internal/markdown"
)

// Measure is the unit a platform counts its message length limit in.
type Measure int

const (
	// Bytes counts UTF-8 bytes (IRC, whose limit is on the protocol line).
	Bytes Measure = iota
	// Runes counts Unicode code points (Slack, XMPP).
	Runes
	// UTF16 counts UTF-16 code units: a character outside the Basic
	// Multilingual Plane, such as most emoji, counts two (Telegram,
	// Matrix).
	UTF16
)

// String names the unit.
func (m Measure) String() string {
	switch m {
	case Bytes:
		return "bytes"
	case Runes:
		return "runes"
	case UTF16:
		return "utf16"
	}
	return "Measure(" + strconv.Itoa(int(m)) + ")"
}

// Len is the length of s in m.
func (m Measure) Len(s string) int {
	switch m {
	case Bytes:
		return len(s)
	case Runes:
		return utf8.RuneCountInString(s)
	}
	n := 0
	for _, r := range s {
		n += units(r)
	}
	return n
}

// units is how many UTF-16 code units r takes (an invalid byte, which
// range reads as U+FFFD, takes one).
func units(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// prefix is the length in bytes of the longest prefix of s that ends
// between two runes and is at most limit long in m.
func (m Measure) prefix(s string, limit int) int {
	switch m {
	case Bytes:
		if len(s) <= limit {
			return len(s)
		}
		i := limit
		// Back up to the start of the rune the limit falls in (at most
		// UTFMax-1 bytes: further back is not one rune).
		for k := 1; k < utf8.UTFMax && i > 0 && !utf8.RuneStart(s[i]); k++ {
			i--
		}
		return i
	case Runes:
		n := 0
		for i := range s {
			if n == limit {
				return i
			}
			n++
		}
		return len(s)
	}
	n := 0
	for i, r := range s {
		u := units(r)
		if n+u > limit {
			return i
		}
		n += u
	}
	return len(s)
}

// Splitter cuts a long answer into the messages a platform accepts, each
// at most Limit long in Measure. It prefers, in order: a paragraph break,
// a line break, (with Fences) the line before a fenced code block that
// fits in a part of its own or a line break inside a code block, a space,
// and at last the limit itself; a paragraph break, line break or space
// is used only if it keeps at least half of the part, so that a long
// answer becomes few messages. A cut never falls inside a rune, so never
// inside a UTF-16 surrogate pair either; it may fall between a letter and
// a combining mark that follows it.
//
// What the parts drop of the text is whitespace: blank lines at its
// start, whitespace at the end of each part, and the line breaks and
// spaces a cut falls on. What they add: with Fences, the closing fence
// and the reopening fence line of a code block cut in two; with Escape,
// a backslash before a block marker that a cut inside a line brought to
// the start of one.
type Splitter struct {
	// Limit is the most a part may measure. A limit under utf8.UTFMax
	// is raised to it, so that every rune fits in a part.
	Limit int
	// Measure is the unit Limit counts.
	Measure Measure
	// Fences keeps fenced code blocks (``` or ~~~) whole in one part
	// when they fit, and else closes a block at the end of a part and
	// opens it again, with its info string (unless that is long), at the
	// start of the next, so that each message reads on its own. A cut
	// inside a line is moved so that neither piece reads as a fence line.
	// Only an absurd block, one whose fence line does not leave room for
	// a line of code or whose marker takes a quarter of the limit, is cut
	// like text.
	Fences bool
	// Escape puts a backslash before a Markdown block marker (a fence,
	// heading, quote or bullet) that a cut inside a line moved to the
	// start of one, so that it stays text: for platforms that render
	// CommonMark, which reads the backslash.
	Escape bool
}

// Split cuts text into parts. Blank text gives no parts.
func (sp Splitter) Split(text string) []string {
	limit := max(sp.Limit, utf8.UTFMax)
	s := strings.TrimLeft(text, "\n")
	var parts []string
	add := func(p string) {
		if p = strings.TrimRight(p, " \t\r\n"); strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	for sp.Measure.prefix(s, limit) < len(s) {
		part, rest, midLine := sp.cut(s, limit)
		add(part)
		midLine = midLine && !strings.HasPrefix(rest, "\n")
		s = strings.TrimLeft(rest, "\n")
		if midLine && sp.Escape && startsBlock(s) {
			s = "\\" + s
		}
	}
	add(s)
	return parts
}

// openBlock is a fenced code block open at some point of the text.
type openBlock struct {
	start  int // the opening line's first byte
	bodyAt int // the first byte after the opening line
	opener string
	fence  markdown.Fence
}

// startsBlock says whether s starts with what Markdown reads as a block
// marker at the start of a line.
func startsBlock(s string) bool {
	_, fenced := markdown.OpenFence(s[:lineEnd(s, 0)])
	return fenced || markdown.IsHeading(s) || markdown.IsBullet(s) || strings.HasPrefix(s, ">")
}

// lineEnd is the index of the newline ending the line that starts at pos
// (len(s) for the last line).
func lineEnd(s string, pos int) int {
	if nl := strings.IndexByte(s[pos:], '\n'); nl >= 0 {
		return pos + nl
	}
	return len(s)
}

// cut returns the first part of s, which is longer than limit, and the
// rest, and whether the cut fell inside a line.
func (sp Splitter) cut(s string, limit int) (part, rest string, midLine bool) {
	w := sp.Measure.prefix(s, limit)
	if w == 0 {
		_, w = utf8.DecodeRuneInString(s)
	}
	half := sp.Measure.prefix(s, limit/2)
	para, line, space := -1, -1, -1
	var open, atW *openBlock
	reached := false
	for pos := 0; pos <= w && pos < len(s); {
		end := lineEnd(s, pos)
		text := s[pos:end]
		cur := open // the block open where the line starts
		if sp.Fences {
			if open != nil {
				if open.fence.Closes(text) {
					open = nil
				}
			} else if f, ok := markdown.OpenFence(text); ok {
				open = &openBlock{start: pos, bodyAt: min(end+1, len(s)), opener: text, fence: f}
			}
		}
		if cur == nil && open == nil {
			// A space at w itself leaves a part of exactly the limit.
			if i := strings.LastIndexByte(s[pos:min(end, w+1)], ' '); i >= 0 && pos+i > 0 {
				space = pos + i
			}
		}
		if end > w {
			// The limit falls in this line.
			reached, atW = true, cur
			if cur == nil {
				atW = open
			}
			break
		}
		if open == nil && end > 0 {
			line = end
			if end+1 < len(s) && s[end+1] == '\n' {
				para = end
			}
		}
		pos = end + 1
	}
	if !reached {
		atW = open
	}
	switch {
	case para >= half:
		return s[:para], s[para+1:], false
	case line >= half:
		return s[:line], s[line+1:], false
	}
	if atW != nil {
		if p, r, ok := sp.cutBlock(s, limit, atW); ok {
			return p, r, false
		}
	}
	if space >= half && !(sp.Fences && fenceLike(strings.TrimLeft(s[space+1:lineEnd(s, space)], " "))) {
		return s[:space], strings.TrimLeft(s[space+1:], " "), true
	}
	if sp.Fences {
		w = fenceSafe(s, w, fenceLike)
	}
	return s[:w], s[w:], atW == nil && s[w-1] != '\n'
}

// fenceLike says whether line reads as a line that opens or closes a
// fenced code block.
func fenceLike(line string) bool {
	_, ok := markdown.OpenFence(line)
	return ok
}

// fenceSafe moves a cut at w inside a line back, a rune at a time, while
// either piece of the line would read as a fence line (fence says which)
// on its own: a code line "```py" cut into "```" and "py" would close its
// block early, a line "a ```x" cut into "a " and "```x" open one.
func fenceSafe(s string, w int, fence func(line string) bool) int {
	start := strings.LastIndexByte(s[:w], '\n') + 1
	end := lineEnd(s, w)
	for v := w; v > start; {
		if !fence(s[start:v]) && !fence(s[v:end]) {
			return v
		}
		_, n := utf8.DecodeLastRuneInString(s[start:v])
		v -= n
	}
	return w
}

// cutBlock cuts s inside (or just before) the fenced block b that is open
// at the limit; false if it cannot.
func (sp Splitter) cutBlock(s string, limit int, b *openBlock) (string, string, bool) {
	m := sp.Measure
	if b.start > 0 {
		// Does the whole block fit in the next part?
		fit := b.start + m.prefix(s[b.start:], limit)
		if fit == len(s) {
			return s[:b.start], s[b.start:], true
		}
		for pos := b.bodyAt; pos < fit; {
			end := lineEnd(s, pos)
			if end > fit {
				break
			}
			if b.fence.Closes(s[pos:end]) {
				return s[:b.start], s[b.start:], true
			}
			pos = end + 1
		}
	}
	closer := "\n" + b.fence.Marker
	reopen := b.opener + "\n"
	if m.Len(closer)+m.Len(reopen) > limit/2 {
		reopen = b.fence.Marker + "\n" // a long info string is not repeated
	}
	if m.Len(closer)+m.Len(reopen) > limit/2 {
		return "", "", false // an absurd fence: cut it like text
	}
	w := m.prefix(s, limit-m.Len(closer))
	if w <= b.bodyAt {
		return "", "", false
	}
	if nl := strings.LastIndexByte(s[b.bodyAt:w], '\n'); nl > 0 {
		p := b.bodyAt + nl
		return s[:p] + closer, reopen + s[p+1:], true
	}
	if b.start > 0 {
		// No line of the block fits after what comes before it: the
		// block starts the next part.
		return s[:b.start], s[b.start:], true
	}
	// One code line longer than a message: cut it where it must be.
	if w = fenceSafe(s, w, b.fence.Closes); w <= b.bodyAt {
		return "", "", false
	}
	return s[:w] + closer, reopen + s[w:], true
}
