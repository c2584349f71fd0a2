package telegram

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

func TestHTML(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"plain", "hello", "hello"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"every special character", `<>&"'*_[]()~` + "`" + `>#+-=|{}.!`, `&lt;&gt;&amp;"'*_[]()~` + "`" + `&gt;#+-=|{}.!`},
		{"backslash escapes", `\*not italic\* \_x\_ \<b\> \` + "`", "*not italic* _x_ &lt;b&gt; `"},
		{"emphasis", "**bold** and *it* and _it2_ and __b2__ and ~~gone~~", "<b>bold</b> and <i>it</i> and <i>it2</i> and <b>b2</b> and <s>gone</s>"},
		{"not emphasis", "snake_case_name and 2 * 3 * 4 and a*b", "snake_case_name and 2 * 3 * 4 and a*b"},
		{"unclosed", "unclosed **bold and *it", "unclosed **bold and *it"},
		{"nested", "*a **b** c*", "<i>a <b>b</b> c</i>"},
		{"bold italic", "***both***", "<b><i>both</i></b>"},
		{"code span", "run `a<b> && *c*` now", "run <code>a&lt;b&gt; &amp;&amp; *c*</code> now"},
		{"double backtick span", "``a ` b``", "<code>a ` b</code>"},
		{"fence", "```go\nif a < b && c {\n\t**x**\n}\n```", "<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c {\n\t**x**\n}</code></pre>"},
		{"fence without language", "~~~\n<tag>\n~~~\nafter", "<pre>&lt;tag&gt;</pre>\nafter"},
		{"unclosed fence", "```\nunclosed <fence>", "<pre>unclosed &lt;fence&gt;</pre>"},
		{"odd language", "```\"><script>\nx\n```", "<pre>x</pre>"},
		{"link", "[site](https://x.y/?a=1&b=2)", `<a href="https://x.y/?a=1&amp;b=2">site</a>`},
		{"link with markup", "[**bold** link](https://a.b)", `<a href="https://a.b"><b>bold</b> link</a>`},
		{"bold link", "**[link](https://a.b)**", `<b><a href="https://a.b">link</a></b>`},
		{"not a link", "[bad](javascript:alert(1)) [x](not a url)", "[bad](javascript:alert(1)) [x](not a url)"},
		{"heading", "# Title <1>\n## **Bold title**", "<b>Title &lt;1&gt;</b>\n<b>Bold title</b>"},
		{"quote", "> quoted <x>\n> *more*\nafter", "<blockquote>quoted &lt;x&gt;\n<i>more</i></blockquote>\nafter"},
		{"bullets", "- one\n* two\n  + three\n1. four", "• one\n• two\n  • three\n1. four"},
		{"emoji", "😀 *x* ü", "😀 <i>x</i> ü"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HTML(tc.md)
			if got != tc.want {
				t.Fatalf("HTML(%q)\n got %q\nwant %q", tc.md, got, tc.want)
			}
			if _, err := parseTelegramHTML(got); err != nil {
				t.Fatalf("HTML(%q) = %q, which Telegram would refuse: %v", tc.md, got, err)
			}
		})
	}
}

// TestHTMLAlwaysValid renders random Markdown made of the characters that
// matter and checks that Telegram's rules accept every result, and that
// the visible text is never longer than the Markdown (Split relies on it).
func TestHTMLAlwaysValid(t *testing.T) {
	pieces := []string{"*", "**", "_", "__", "~~", "~", "`", "```", "```go\n", "\n```\n", "[", "]", "(", ")", "(https://a.b)",
		"<", ">", "&", "\"", "'", "\\", "#", "# ", "> ", "- ", "\n", "\n\n", " ", "word", "x", "😀", "é", "|", "{", "}", ".", "!", "=", "+"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(24) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		md := b.String()
		h := HTML(md)
		text, err := parseTelegramHTML(h)
		if err != nil {
			t.Fatalf("case %d: HTML(%q) = %q: %v", i, md, h, err)
		}
		if gw.UTF16.Len(text) > gw.UTF16.Len(md) {
			t.Fatalf("case %d: the visible text of HTML(%q) is longer than the Markdown: %q", i, md, text)
		}
	}
}

func FuzzHTML(f *testing.F) {
	for _, s := range []string{"**a*b**c*", "```\n`x`\n```", "[a](https://b)", "> *q*", "_a_b_", "\\", "***", "`` ` ``"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		h := HTML(md)
		if _, err := parseTelegramHTML(h); err != nil {
			t.Fatalf("HTML(%q) = %q: %v", md, h, err)
		}
	})
}

// parseTelegramHTML checks s against the Bot API's rules for parse_mode
// HTML (https://core.telegram.org/bots/api#html-style) and returns the
// visible text: only the supported tags, properly nested, no entity in
// code or pre other than code directly in pre, no blockquote in a
// blockquote, only the four named character references, and no bare <, >
// or &.
func parseTelegramHTML(s string) (string, error) {
	allowed := map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
		"strike": true, "del": true, "tg-spoiler": true, "a": true, "code": true, "pre": true, "blockquote": true}
	var stack []string
	var text strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '>':
			return "", fmt.Errorf("bare > at %d", i)
		case '&':
			j := strings.IndexByte(s[i:], ';')
			if j < 0 {
				return "", fmt.Errorf("bare & at %d", i)
			}
			ent := s[i : i+j+1]
			switch ent {
			case "&lt;":
				text.WriteByte('<')
			case "&gt;":
				text.WriteByte('>')
			case "&amp;":
				text.WriteByte('&')
			case "&quot;":
				text.WriteByte('"')
			default:
				return "", fmt.Errorf("unsupported entity %q at %d", ent, i)
			}
			i += j + 1
			continue
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return "", fmt.Errorf("unclosed tag at %d", i)
			}
			tag := s[i+1 : i+j]
			i += j + 1
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("</%s> closes %v", name, stack)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, attrs, _ := strings.Cut(tag, " ")
			if !allowed[name] {
				return "", fmt.Errorf("unsupported tag <%s>", tag)
			}
			switch {
			case name == "a":
				if !strings.HasPrefix(attrs, `href="`) || !strings.HasSuffix(attrs, `"`) || strings.ContainsAny(attrs[6:len(attrs)-1], `"<>`) {
					return "", fmt.Errorf("bad link <%s>", tag)
				}
			case name == "code" && attrs != "":
				if len(stack) == 0 || stack[len(stack)-1] != "pre" || !strings.HasPrefix(attrs, `class="language-`) {
					return "", fmt.Errorf("bad <%s>", tag)
				}
			case attrs != "":
				return "", fmt.Errorf("unexpected attributes in <%s>", tag)
			}
			for _, open := range stack {
				if open == "code" || open == "pre" && name != "code" {
					return "", fmt.Errorf("<%s> inside <%s>", name, open)
				}
				if open == "blockquote" && name == "blockquote" || open == "a" && name == "a" {
					return "", fmt.Errorf("nested <%s>", name)
				}
			}
			stack = append(stack, name)
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		text.WriteString(s[i : i+size])
		i += size
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("unclosed %v", stack)
	}
	return text.String(), nil
}
