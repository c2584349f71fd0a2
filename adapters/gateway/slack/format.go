package slack

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mrkdwn turns the Markdown models write into Slack's mrkdwn: **bold** and
// __bold__ become *bold*, *italic* and _italic_ become _italic_,
// ~~strike~~ becomes ~strike~, [text](url) becomes <url|text>, headings
// become bold lines and list bullets •; code spans and fenced blocks are
// kept (a fence's language tag dropped, Slack would show it as text). &, <
// and > are escaped everywhere, as Slack requires, so that text cannot
// form mentions or links by accident.
func Mrkdwn(md string) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	fenced := false
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			if !fenced {
				fenced = true
				b.WriteString("```")
				continue
			}
			fenced = false
			b.WriteString("```")
			continue
		}
		if fenced {
			b.WriteString(escape(line))
			continue
		}
		b.WriteString(block(line))
	}
	if fenced {
		b.WriteString("\n```")
	}
	return b.String()
}

// block converts one line outside code blocks.
func block(line string) string {
	indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
	rest := line[len(indent):]
	if h := strings.TrimLeft(rest, "#"); len(h) < len(rest) && len(rest)-len(h) <= 6 && strings.HasPrefix(h, " ") {
		body := strings.TrimSpace(h)
		body = strings.TrimSuffix(strings.TrimSuffix(body, "**"), "**")
		body = strings.TrimPrefix(body, "**")
		return indent + "*" + inline(body) + "*"
	}
	for _, bullet := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(rest, bullet) {
			return indent + "• " + inline(rest[len(bullet):])
		}
	}
	return indent + inline(rest)
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// inline converts emphasis, code spans and links in s.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				b.WriteString("`" + escape(s[i+1:i+1+j]) + "`")
				i += j + 2
				continue
			}
		case c == '[':
			if text, url, n, ok := link(s[i:]); ok {
				b.WriteString("<" + strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C").Replace(url) + "|" + inline(text) + ">")
				i += n
				continue
			}
		case strings.HasPrefix(s[i:], "**") || strings.HasPrefix(s[i:], "__"):
			if inner, n, ok := span(s, i, s[i:i+2]); ok {
				b.WriteString("*" + inline(inner) + "*")
				i += n
				continue
			}
		case strings.HasPrefix(s[i:], "~~"):
			if inner, n, ok := span(s, i, "~~"); ok {
				b.WriteString("~" + inline(inner) + "~")
				i += n
				continue
			}
		case c == '*' || c == '_':
			if inner, n, ok := span(s, i, string(c)); ok {
				b.WriteString("_" + inline(inner) + "_")
				i += n
				continue
			}
		}
		switch c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// span finds the emphasis that opens with delim at s[i]: the delimiter
// must touch a non-space on its inner side, and for _ stand outside a word
// (snake_case stays as it is). It returns the text inside and the length
// taken.
func span(s string, i int, delim string) (string, int, bool) {
	start := i + len(delim)
	if start >= len(s) {
		return "", 0, false
	}
	if r, _ := utf8.DecodeRuneInString(s[start:]); unicode.IsSpace(r) {
		return "", 0, false
	}
	if delim[0] == '_' && i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); unicode.IsLetter(r) || unicode.IsDigit(r) {
			return "", 0, false
		}
	}
	for from := start + 1; from <= len(s); {
		j := strings.Index(s[from:], delim)
		if j < 0 {
			return "", 0, false
		}
		end := from + j
		r, _ := utf8.DecodeLastRuneInString(s[:end])
		after := end + len(delim)
		okAfter := true
		if delim[0] == '_' && after < len(s) {
			ra, _ := utf8.DecodeRuneInString(s[after:])
			okAfter = !unicode.IsLetter(ra) && !unicode.IsDigit(ra)
		}
		// A single * must not be the first of a ** pair.
		if len(delim) == 1 && after < len(s) && s[after] == delim[0] {
			okAfter = false
		}
		if !unicode.IsSpace(r) && okAfter {
			return s[start:end], after - i, true
		}
		from = end + 1
	}
	return "", 0, false
}

// link parses "[text](url)" at the start of s.
func link(s string) (text, url string, n int, ok bool) {
	close := strings.Index(s, "](")
	if close < 1 || strings.ContainsRune(s[1:close], '\n') {
		return "", "", 0, false
	}
	end := strings.IndexByte(s[close+2:], ')')
	if end < 0 {
		return "", "", 0, false
	}
	url = strings.TrimSpace(s[close+2 : close+2+end])
	if url == "" || strings.ContainsAny(url, " \n") {
		return "", "", 0, false
	}
	return s[1:close], url, close + 3 + end, true
}
