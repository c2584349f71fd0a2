package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-go/hermes/adapters/gateway/internal/markdown"
)

// HTML renders the Markdown a model writes as the HTML subset of the Bot
// API's parse_mode HTML: **bold** and __bold__ → <b>, *italic* and _italic_
// → <i>, ~~strike~~ → <s>, `code` → <code>, fenced blocks → <pre>, [text](url)
// → <a href>, # headings → bold lines, > quotes → <blockquote>, list bullets
// → •. Everything else is text, with <, > and & escaped. Every tag it opens
// it closes in order (unmatched markers stay as they are), so Telegram's
// parser accepts the result; should it still refuse, Send falls back to
// plain text.
func HTML(md string) string {
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); {
		line := lines[i]
		if f, ok := markdown.OpenFence(line); ok {
			j := i + 1
			for j < len(lines) && !f.Closes(lines[j]) {
				j++
			}
			body := strings.Join(lines[i+1:j], "\n")
			if lang := f.Lang(); lang != "" {
				out = append(out, `<pre><code class="language-`+lang+`">`+escape(body)+"</code></pre>")
			} else {
				out = append(out, "<pre>"+escape(body)+"</pre>")
			}
			i = j + 1 // past the closing fence (or the end: an unclosed fence runs to it)
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case markdown.IsHeading(trimmed):
			h := strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
			for _, d := range []string{"**", "__"} {
				if len(h) > 4 && strings.HasPrefix(h, d) && strings.HasSuffix(h, d) && !strings.Contains(h[2:len(h)-2], d) {
					h = h[2 : len(h)-2] // "# **Title**": bold already
				}
			}
			out = append(out, "<b>"+inline(h, true)+"</b>")
		case strings.HasPrefix(trimmed, ">"):
			var quote []string
			for i < len(lines) && strings.HasPrefix(strings.TrimLeft(lines[i], " "), ">") {
				q := strings.TrimPrefix(strings.TrimLeft(lines[i], " "), ">")
				quote = append(quote, inline(strings.TrimPrefix(q, " "), true))
				i++
			}
			out = append(out, "<blockquote>"+strings.Join(quote, "\n")+"</blockquote>")
			continue
		case markdown.IsBullet(trimmed):
			indent := line[:len(line)-len(trimmed)]
			out = append(out, indent+"• "+inline(trimmed[2:], true))
		default:
			out = append(out, inline(line, true))
		}
		i++
	}
	return strings.Join(out, "\n")
}

// escape makes s text in Telegram HTML.
func escape(s string) string {
	return htmlText.Replace(s)
}

var (
	htmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	htmlAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
)

// inline renders one line (or a quote's lines) of inline Markdown. links
// is false inside a link's text: Telegram does not nest links.
func inline(s string, links bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			b.WriteString(escape(s[i+1 : i+2]))
			i += 2
			continue
		case c == '`':
			n := markdown.Run(s, i, '`')
			if end := findRun(s, i+n, '`', n); end >= 0 {
				code := s[i+n : end]
				if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' {
					code = code[1 : len(code)-1]
				}
				if code != "" {
					b.WriteString("<code>" + escape(code) + "</code>")
					i = end + n
					continue
				}
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		case c == '[' && links:
			if text, url, end, ok := link(s, i); ok {
				b.WriteString(`<a href="` + htmlAttr.Replace(url) + `">` + inline(text, false) + "</a>")
				i = end
				continue
			}
		case c == '*' || c == '_' || c == '~':
			if tag, inner, end, ok := emphasis(s, i); ok {
				b.WriteString("<" + tag + ">" + inline(inner, links) + "</" + tag + ">")
				i = end
				continue
			}
			// An unmatched run stays text as a whole, so that its
			// markers cannot pair with later ones by halves.
			n := markdown.Run(s, i, c)
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(escape(s[i : i+size]))
		i += size
	}
	return b.String()
}

func isPunct(c byte) bool {
	return c < utf8.RuneSelf && unicode.IsPunct(rune(c)) || strings.IndexByte("$+<=>^`|~", c) >= 0
}

// findRun finds, from i, a run of exactly n c's; -1 when there is none.
func findRun(s string, i int, c byte, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], c)
		if j < 0 {
			return -1
		}
		j += i
		m := markdown.Run(s, j, c)
		if m == n {
			return j
		}
		i = j + m
	}
	return -1
}

// link parses [text](url) at i. Only web, mail and tg: links become links.
func link(s string, i int) (text, url string, end int, ok bool) {
	depth := 0
	j := i
	for ; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
			continue
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(s) || j+1 >= len(s) || s[j+1] != '(' {
		return "", "", 0, false
	}
	k := strings.IndexByte(s[j+2:], ')')
	if k < 0 {
		return "", "", 0, false
	}
	url = s[j+2 : j+2+k]
	if url == "" || strings.ContainsAny(url, " \t<>\"") || !allowedScheme(url) {
		return "", "", 0, false
	}
	text = s[i+1 : j]
	if text == "" {
		text = url
	}
	return text, url, j + 3 + k, true
}

func allowedScheme(url string) bool {
	u := strings.ToLower(url)
	for _, p := range []string{"http://", "https://", "mailto:", "tg://"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// emphasis parses a bold, italic or strikethrough span at i.
func emphasis(s string, i int) (tag, inner string, end int, ok bool) {
	c := s[i]
	n := markdown.Run(s, i, c)
	var delim string
	switch {
	case n >= 2 && c != '~' || n == 2 && c == '~':
		delim = s[i : i+2]
	case n == 1 && c != '~':
		delim = s[i : i+1]
	default:
		return "", "", 0, false
	}
	open := i + len(delim)
	if open >= len(s) || isSpace(s[open]) {
		return "", "", 0, false
	}
	if c == '_' && i > 0 && markdown.IsWord(s[i-1]) {
		return "", "", 0, false // snake_case is not emphasis
	}
	for j := open; j < len(s); {
		switch {
		case s[j] == '\\':
			j += 2
			continue
		case s[j] == '`':
			m := markdown.Run(s, j, '`')
			if e := findRun(s, j+m, '`', m); e >= 0 {
				j = e + m
				continue
			}
			j += m
			continue
		case s[j] != c:
			j++
			continue
		}
		m := markdown.Run(s, j, c)
		if m != len(delim) && !(len(delim) == 2 && m == 3) || isSpace(s[j-1]) || j == open {
			if len(delim) == 1 && m == 2 {
				// **bold** inside *italic*: skip it whole.
				if e := strings.Index(s[j+2:], delim+delim); e >= 0 {
					j += 2 + e + 2
					continue
				}
			}
			j += m
			continue
		}
		if c == '_' && j+len(delim) < len(s) && markdown.IsWord(s[j+len(delim)]) {
			j += m
			continue
		}
		if m == 3 {
			// ***x*** closes the inner italic first: **, then *.
			j++
		}
		switch {
		case c == '~':
			tag = "s"
		case len(delim) == 2:
			tag = "b"
		default:
			tag = "i"
		}
		return tag, s[open:j], j + len(delim), true
	}
	return "", "", 0, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
