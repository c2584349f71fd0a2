package markdown

import (
	"strings"
	"unicode/utf8"
)

// Split cuts Markdown into parts of at most limit UTF-16 code units (the
// unit Telegram counts its 4096-character limit in), preferring, in order:
// a paragraph break, a line break, the line before a fenced code block
// that fits in a part of its own, a line break inside a code block (the
// block is closed at the end of the part and opened again, with its
// language, at the start of the next), a space, and at last any character.
// Cuts outside code blocks are used only when they keep at least half of
// the part, so a long answer becomes few messages. The rendered text of a
// part is never longer than its Markdown, so parts stay within the limit
// after HTML rendering too.
func Split(md string, limit int) []string {
	s := strings.Trim(md, "\n")
	var parts []string
	for UTF16Len(s) > limit {
		part, rest, midLine := cut(s, limit)
		if strings.TrimSpace(part) != "" {
			parts = append(parts, strings.TrimRight(part, "\n"))
		}
		midLine = midLine && !strings.HasPrefix(rest, "\n")
		s = strings.TrimLeft(rest, "\n")
		if midLine && startsBlock(s) {
			// The cut put text that was inside a line at the start of
			// one, where it would read as a Fence, heading, quote or
			// bullet: keep it text.
			s = "\\" + s
		}
	}
	if strings.TrimSpace(s) != "" {
		parts = append(parts, s)
	}
	return parts
}

// openBlock is a fenced block still open at some point of the text.
type openBlock struct {
	start   int // the opening line's first byte
	bodyAt  int // the first byte after the opening line
	opener  string
	closeAt int // the end of the closing line, or len(s)
	f       Fence
}

// startsBlock says whether s starts with what Markdown reads as a block
// marker at the start of a line.
func startsBlock(s string) bool {
	_, fenced := OpenFence(s[:lineEnd(s, 0)])
	return fenced || IsHeading(s) || IsBullet(s) || strings.HasPrefix(s, ">")
}

// cut returns the first part of s and the rest, and whether the cut fell
// inside a line.
func cut(s string, limit int) (string, string, bool) {
	w := prefix(s, limit)
	if w == 0 {
		_, w = utf8.DecodeRuneInString(s)
	}
	paraOut, lineOut, spaceOut := -1, -1, -1
	var open, atW *openBlock
	reached := false
	for pos := 0; pos < len(s) && pos < w; {
		end := lineEnd(s, pos)
		line := s[pos:end]
		cur := open // the block open where the line starts
		if open != nil {
			if open.f.Closes(line) {
				open = nil
			}
		} else if f, ok := OpenFence(line); ok {
			open = &openBlock{start: pos, bodyAt: min(end+1, len(s)), opener: line, f: f}
		}
		plain := cur == nil && open == nil
		if plain {
			for i := max(pos, 1); i < min(end, w); i++ {
				if s[i] == ' ' {
					spaceOut = i
				}
			}
		}
		if end >= w {
			// The limit falls in this line.
			reached, atW = true, cur
			if cur == nil {
				atW = open
			}
			break
		}
		if open == nil && end > 0 {
			lineOut = end
			if end+1 < len(s) && s[end+1] == '\n' {
				paraOut = end
			}
		}
		pos = end + 1
	}
	if !reached {
		atW = open
	}
	half := w / 2
	switch {
	case paraOut > 0 && paraOut >= half:
		return s[:paraOut], s[paraOut+1:], false
	case lineOut > 0 && lineOut >= half:
		return s[:lineOut], s[lineOut+1:], false
	}
	if atW != nil {
		if p, r, ok := cutBlock(s, limit, atW); ok {
			return p, r, false
		}
	}
	switch {
	case lineOut > 0:
		return s[:lineOut], s[lineOut+1:], false
	case spaceOut > 0:
		return s[:spaceOut], s[spaceOut+1:], true
	}
	return s[:w], s[w:], true
}

// lineEnd is the index of the newline ending the line that starts at pos
// (len(s) for the last line).
func lineEnd(s string, pos int) int {
	if nl := strings.IndexByte(s[pos:], '\n'); nl >= 0 {
		return pos + nl
	}
	return len(s)
}

// cutBlock cuts s inside (or just before) the fenced block b that is open
// at the limit.
func cutBlock(s string, limit int, b *openBlock) (string, string, bool) {
	// Where does the block end?
	b.closeAt = len(s)
	for pos := b.bodyAt; pos < len(s); {
		end := lineEnd(s, pos)
		if b.f.Closes(s[pos:end]) {
			b.closeAt = end
			break
		}
		pos = end + 1
	}
	if b.start > 0 && UTF16Len(s[b.start:b.closeAt]) <= limit {
		return s[:b.start], s[b.start:], true // the whole block fits in the next part
	}
	closer := "\n" + b.f.Marker
	reopen := b.opener + "\n"
	if UTF16Len(closer)+UTF16Len(reopen) > limit/2 {
		return "", "", false // an absurd Fence line: cut it like text
	}
	w := prefix(s, limit-UTF16Len(closer))
	if w <= b.bodyAt {
		return "", "", false
	}
	if nl := strings.LastIndexByte(s[b.bodyAt:w], '\n'); nl > 0 {
		p := b.bodyAt + nl
		return s[:p] + closer, reopen + s[p+1:], true
	}
	// One code line longer than a message: cut it where it must be.
	return s[:w] + closer, reopen + s[w:], true
}

// prefix is the longest prefix of s, in bytes and on a rune boundary, that
// is at most limit UTF-16 code units long.
func prefix(s string, limit int) int {
	n := 0
	for i, r := range s {
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if n+u > limit {
			return i
		}
		n += u
	}
	return len(s)
}

// UTF16Len is the length of s in UTF-16 code units.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
