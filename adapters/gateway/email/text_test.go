package email

import "testing"

func TestHTMLText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paragraphs", "<p>one</p><p>two</p>", "one\n\ntwo"},
		{"line breaks", "a<br>b<br/>c", "a\nb\nc"},
		{"inline markup", "Hello <b>bold</b> and <i>it</i>", "Hello bold and it"},
		{"entities", "a &amp; b &lt;c&gt; &eacute;", "a & b <c> é"},
		{"links", `see <a href="https://x.test/p">the page</a>`, "see the page (https://x.test/p)"},
		{"bare link", `<a href="https://x.test">https://x.test</a>`, "https://x.test"},
		{"mailto not shown", `<a href="mailto:a@b.test">write</a>`, "write"},
		{"lists", "<ul><li>one</li><li>two</li></ul>", "- one\n- two"},
		{"dropped", "<head><title>T</title><style>p{}</style></head><script>x()</script><p>body</p>", "body"},
		{"whitespace", "<p>  many\n\n   spaces  </p>", "many spaces"},
		{"table", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HTMLText(tc.in); got != tc.want {
				t.Fatalf("HTMLText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStripQuoted(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "just text", "just text"},
		{"bottom quote", "answer\n\nOn Mon, 1 Jan 2026, Bob <b@x.test> wrote:\n> old\n> older\n", "answer"},
		{"wrapped attribution", "answer\n\nOn Mon, 1 Jan 2026 at 10:00, Bob Example\n<b@x.test> wrote:\n> old\n", "answer"},
		{"quote only at the end", "> quoted at top\nmy answer\n> trailing", "> quoted at top\nmy answer"},
		{"signature", "answer\n-- \nBob\nPhone 123", "answer"},
		{"outlook", "answer\n\n-----Original Message-----\nFrom: Bob\nSent: today\n\nold text", "answer"},
		{"only quotes kept", "> everything\n> is quoted", "> everything\n> is quoted"},
		{"crlf", "answer\r\n\r\nOn Tue, Bob wrote:\r\n> old\r\n", "answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StripQuoted(tc.in); got != tc.want {
				t.Fatalf("StripQuoted(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
