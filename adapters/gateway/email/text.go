package email

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLText turns an HTML mail body into plain text for the model:
// paragraphs, line breaks and list items kept, links followed by their
// address, scripts, styles and the head dropped, entities decoded.
func HTMLText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0 // inside script, style, head, title
	var href []string
	newline := func(n int) {
		s := b.String()
		have := len(s) - len(strings.TrimRight(s, "\n"))
		if len(s) == 0 {
			return
		}
		for ; have < n; have++ {
			b.WriteByte('\n')
		}
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return tidy(b.String())
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := collapse(string(z.Text()))
			if t == " " && (b.Len() == 0 || strings.HasSuffix(b.String(), "\n") || strings.HasSuffix(b.String(), " ")) {
				continue
			}
			b.WriteString(t)
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			end := tt == html.EndTagToken
			switch a {
			case atom.Script, atom.Style, atom.Head, atom.Title, atom.Noscript:
				if tt == html.StartTagToken {
					skip++
				} else if end && skip > 0 {
					skip--
				}
			case atom.Br:
				b.WriteByte('\n')
			case atom.P, atom.Div, atom.Table, atom.Blockquote, atom.Pre, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Ul, atom.Ol:
				newline(2)
			case atom.Tr, atom.Hr:
				newline(1)
			case atom.Li:
				if !end {
					newline(1)
					b.WriteString("- ")
				}
			case atom.Td, atom.Th:
				if end {
					b.WriteByte(' ')
				}
			case atom.A:
				if !end {
					url := ""
					for hasAttr {
						var k, v []byte
						k, v, hasAttr = z.TagAttr()
						if string(k) == "href" {
							url = string(v)
						}
					}
					href = append(href, url)
				} else if len(href) > 0 {
					url := href[len(href)-1]
					href = href[:len(href)-1]
					if (strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) && !strings.HasSuffix(b.String(), url) {
						b.WriteString(" (" + url + ")")
					}
				}
			}
		}
	}
}

var spaces = regexp.MustCompile(`[ \t\r\n\f]+`)

func collapse(s string) string { return spaces.ReplaceAllString(s, " ") }

// tidy trims each line and allows at most one empty line in a row.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	blank := 0
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if blank++; blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// attribution matches the line mail clients put above the quoted message
// ("On Mon, 23 Nov 2026, Alice <a@example.org> wrote:").
var attribution = regexp.MustCompile(`(?i)^(on\b.*\bwrote:|le\b.*\ba écrit\s*:|am\b.*\bschrieb\b.*:|-+ ?original message ?-+)$`)

// StripQuoted cuts what a reply quotes of earlier mail — the trailing
// block of "> " lines and the attribution line above it — and the
// signature after "-- ", which the session has seen (or need not see)
// already. A message that is nothing but quotes is kept whole.
func StripQuoted(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "-- " || l == "--" && i > 0 {
			lines = lines[:i]
			break
		}
	}
	end := len(lines)
	for end > 0 && (strings.TrimSpace(lines[end-1]) == "" || strings.HasPrefix(lines[end-1], ">")) {
		end--
	}
	cut := end
	// the attribution, which clients may wrap over two lines
	for k := end - 1; k >= 0 && k >= end-2; k-- {
		if attribution.MatchString(strings.TrimSpace(strings.Join(lines[k:end], " "))) {
			cut = k
			break
		}
	}
	// an Outlook-style header block of the original, with no "> "
	for k := 0; k < cut; k++ {
		if attribution.MatchString(strings.TrimSpace(lines[k])) && strings.HasPrefix(strings.ToLower(strings.TrimSpace(lines[k])), "-") {
			cut = k
			break
		}
	}
	out := strings.TrimSpace(strings.Join(lines[:cut], "\n"))
	if out == "" {
		return strings.TrimSpace(s)
	}
	return out
}
