package dashboard

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// urlAttrs are the attributes a browser follows or loads.
var urlAttrs = map[string]bool{"href": true, "src": true, "action": true, "formaction": true, "xlink:href": true,
	"background": true, "poster": true, "cite": true, "srcset": true, "data": true, "ping": true}

// inPage is an attribute value as the browser acts on it: the parser has
// unescaped the entities; the browser drops whitespace and control
// characters around and inside a scheme and does not care for its case.
func inPage(v string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, v))
}

// raster is what an <img src> may hold as a data: URL.
func raster(v string) bool {
	for _, t := range []string{"png", "gif", "jpeg", "webp"} {
		if strings.HasPrefix(v, "data:image/"+t+";") {
			return true
		}
	}
	return false
}

// hostile walks rendered HTML and returns what a browser could run.
func hostile(t *testing.T, rendered string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "object", "embed", "style", "form", "base", "meta":
				bad = append(bad, "<"+n.Data+">")
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if strings.HasPrefix(key, "on") || key == "style" {
					bad = append(bad, key+"="+a.Val)
					continue
				}
				if !urlAttrs[key] {
					continue
				}
				v := inPage(a.Val)
				for _, scheme := range []string{"javascript:", "vbscript:", "data:", "file:"} {
					if strings.HasPrefix(v, scheme) && !(n.Data == "img" && key == "src" && raster(v)) {
						bad = append(bad, n.Data+" "+key+"="+a.Val)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return bad
}

func TestMarkdownDropsExecutableLinks(t *testing.T) {
	const b64 = "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="
	inputs := []string{
		// inline links: case, entities (numeric, hex, named), escapes, whitespace
		"[x](javascript:alert(1))",
		"[x](JaVaScRiPt:alert(document.cookie))",
		"[x](jav&#x61;script:alert(1))",
		"[x](jav&#97;script:alert(1))",
		"[x](&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1))",
		"[x](&#x6A;avascript&#x3A;alert(1))",
		"[x](javascript&colon;alert(1))",
		"[x](java&Tab;script:alert(1))",
		"[x](java&NewLine;script:alert(1))",
		"[x](java&#x09;script:alert(1))",
		"[x](java&#13;script:alert(1))",
		"[x](&#x20;javascript:alert(1))",
		"[x](&#1;javascript:alert(1))",
		"[x](javascript\\:alert(1))",
		"[x](<javascript:alert(1)>)",
		"[x](<java\tscript:alert(1)>)",
		"[x](<java script:alert(1)>)",
		"[x](\x01javascript:alert(1))",
		"[x](\njavascript:alert(1) \"title\")",
		"[x](vbscript:msgbox(1))",
		"[x](VBScript&#58;msgbox(1))",
		"[x](data:text/html;base64," + b64 + ")",
		"[x](DaTa:text/html,%3Cscript%3Ealert(1)%3C/script%3E)",
		"[x](data:image/svg+xml;base64," + b64 + ")",
		"[x](file:///etc/passwd)",
		// reference links
		"[x][r]\n\n[r]: javascript:alert(1)",
		"[x]\n\n[x]:\n  <jav&#x61;script:alert(1)> \"t\"",
		"[y][]\n\n[y]: vbscript:run",
		// autolinks, CommonMark's and linkify's
		"<javascript:alert(1)>",
		"<JAVASCRIPT:alert(1)>",
		"<jAvAsCrIpT:alert(document.domain)>",
		"<vbscript:msgbox(1)>",
		"<data:text/html;base64," + b64 + ">",
		"<jav&#x61;script:alert(1)>",
		"<javascript:alert(1)@example.com>",
		"<javascript&#58;alert(1)>",
		"see javascript:alert(1) and www.example.com/javascript:alert(1)",
		"mail javascript:alert(1)@example.com",
		// images
		"![i](javascript:alert(1))",
		"![i](jav&#x61;script:alert(1))",
		"![i](data:text/html;base64," + b64 + ")",
		"![i](data:image/svg+xml;base64," + b64 + ")",
		"[![i](javascript:a)](javascript:b)",
		// inside other blocks
		"| a |\n|---|\n| [x](javascript:alert(1)) |",
		"> - *[x](javascript:alert(1))*",
		"~~<javascript:alert(1)>~~",
		// raw HTML stays text
		"<a href=\"javascript:alert(1)\">x</a>",
		"<img src=x onerror=alert(1)>",
		"<svg><script>alert(1)</script></svg>",
	}
	m := newMarkdown()
	for _, in := range inputs {
		out := string(m.render(in))
		if bad := hostile(t, out); len(bad) > 0 {
			t.Errorf("%q renders %s: %v", in, out, bad)
		}
	}
}

// TestMarkdownKeepsOrdinaryLinks: the filter takes links that cannot run
// code, not links.
func TestMarkdownKeepsOrdinaryLinks(t *testing.T) {
	cases := []struct{ in, tag, attr, want string }{
		{"[ok](https://example.com/a?b=c&d=e)", "a", "href", "https://example.com/a?b=c&d=e"},
		{"<https://example.com/x>", "a", "href", "https://example.com/x"},
		{"go to www.example.com now", "a", "href", "http://www.example.com"},
		{"[rel](./docs/javascript:notes.md)", "a", "href", "./docs/javascript:notes.md"},
		{"[top](#section)", "a", "href", "#section"},
		{"[m](mailto:a@example.com)", "a", "href", "mailto:a@example.com"},
		{"write to a@example.com", "a", "href", "mailto:a@example.com"},
		{"[ftp](ftp://example.com/f)", "a", "href", "ftp://example.com/f"},
		{"![png](data:image/png;base64,iVBORw0KGgo=)", "img", "src", "data:image/png;base64,iVBORw0KGgo="},
		{"![pic](https://example.com/p.png)", "img", "src", "https://example.com/p.png"},
	}
	m := newMarkdown()
	for _, c := range cases {
		out := string(m.render(c.in))
		doc, err := html.Parse(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data == c.tag {
				for _, a := range n.Attr {
					if a.Key == c.attr {
						got = append(got, a.Val)
					}
				}
			}
			for k := n.FirstChild; k != nil; k = k.NextSibling {
				walk(k)
			}
		}
		walk(doc)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%q renders %s: %s %v, want %s", c.in, out, c.attr, got, c.want)
		}
	}
	// A dropped link keeps its text.
	if out := string(m.render("[click here](javascript:alert(1)) or <javascript:void(0)>")); !strings.Contains(out, "click here") || !strings.Contains(out, "javascript:void(0)") {
		t.Errorf("the text of dropped links is gone: %s", out)
	}
}
