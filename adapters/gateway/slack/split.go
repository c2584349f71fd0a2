package slack

import (
	"strings"
	"unicode/utf8"
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

// fenceRoom is what closing and reopening a code block adds to a part.
const fenceRoom = len("```\n") + len("\n```")

// Split cuts text into parts of at most limit characters, preferring a
// paragraph break, then a line break, then a space; a code block cut in
// two is closed at the end of one part and reopened at the start of the
// next. Blank text gives no parts.
func Split(text string, limit int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	budget := limit - fenceRoom
	if budget < 16 {
		budget = 16
	}
	var (
		parts []string
		open  bool // a code block runs on into the next part
	)
	for text != "" {
		head := ""
		if open {
			head = "```\n"
		}
		cut := cutAt(text, budget)
		part := strings.TrimRight(text[:cut], " \n")
		text = strings.TrimLeft(text[cut:], " \n")
		if open {
			part = head + part
		}
		open = fences(part)%2 == 1
		if open {
			part += "\n```"
		}
		if strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
	}
	return parts
}

// cutAt is the byte offset to cut text at: within limit characters, at
// the last paragraph break, line break or space in the second half, or
// at limit characters.
func cutAt(text string, limit int) int {
	if utf8.RuneCountInString(text) <= limit {
		return len(text)
	}
	end := 0
	for n := 0; n < limit; n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	window := text[:end]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > end/2 {
			return i + len(sep)
		}
	}
	return end
}

// fences counts the lines of s that open or close a code block.
func fences(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			n++
		}
	}
	return n
}
