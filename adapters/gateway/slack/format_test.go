package slack_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-go/hermes/adapters/gateway/slack"
)

func TestMrkdwn(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"bold", "**Paris** and __Rome__", "*Paris* and *Rome*"},
		{"italics", "*very* and _quite_", "_very_ and _quite_"},
		{"strike", "~~old~~ new", "~old~ new"},
		{"escaping", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no accidental mention", "<!channel> <@U123>", "&lt;!channel&gt; &lt;@U123&gt;"},
		{"code span kept, escaped inside", "run `a && b` **now**", "run `a &amp;&amp; b` *now*"},
		{"emphasis not inside code", "`**x**`", "`**x**`"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&c=2|the docs>"},
		{"link with bold text", "[**go**](https://go.dev)", "<https://go.dev|*go*>"},
		{"link pipe escaped", "[x](https://e.com/a|b)", "<https://e.com/a%7Cb|x>"},
		{"heading", "## Results", "*Results*"},
		{"bullets", "- one\n* two\n  + three", "• one\n• two\n  • three"},
		{"snake_case kept", "use my_var_name here", "use my_var_name here"},
		{"lone star", "2 * 3 = 6", "2 * 3 = 6"},
		{"fence drops language, escapes", "```go\nif a < b {\n}\n```", "```\nif a &lt; b {\n}\n```"},
		{"unclosed fence closed", "```\nx", "```\nx\n```"},
		{"plain", "hello", "hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := slack.Mrkdwn(c.in); got != c.want {
				t.Fatalf("Mrkdwn(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestSplitKeepsEverythingUnderTheLimit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 400; i++ {
		b.WriteString("Paragraph with some words in it, number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(".\n\n")
	}
	text := strings.TrimSpace(b.String())
	parts := slack.Split(text, 1000)
	if len(parts) < 10 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 1000 {
			t.Fatalf("part %d has %d characters", i, n)
		}
	}
	if got := strings.Join(parts, "\n\n"); got != text {
		t.Fatal("the parts do not add up to the text")
	}
}

func TestSplitClosesAndReopensCodeBlocks(t *testing.T) {
	code := "```\n" + strings.Repeat("fmt.Println(\"a line of code\")\n", 200) + "```"
	parts := slack.Split("Here:\n\n"+code+"\n\nDone.", 1500)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	lines := 0
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 1500 {
			t.Fatalf("part %d: %d characters", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("part %d leaves a code block open:\n%s", i, p)
		}
		lines += strings.Count(p, "fmt.Println")
	}
	if lines != 200 {
		t.Fatalf("%d code lines arrived, want 200", lines)
	}
}

func TestSplitWithoutSpacesAndBlank(t *testing.T) {
	parts := slack.Split(strings.Repeat("é", 2500), 1000)
	if len(parts) != 3 || utf8.RuneCountInString(parts[0]) > 1000 || strings.Join(parts, "") != strings.Repeat("é", 2500) {
		t.Fatalf("%d parts", len(parts))
	}
	if p := slack.Split(" \n ", 100); p != nil {
		t.Fatalf("blank text gave %q", p)
	}
}

// Escaping can lengthen a part; Parts cuts again so that every mrkdwn part
// fits the limit.
func TestPartsFitAfterEscaping(t *testing.T) {
	parts := slack.Parts(strings.Repeat("a<b ", 2000), slack.MaxMessage)
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > slack.MaxMessage {
			t.Fatalf("part %d: %d characters", i, n)
		}
	}
	if got := strings.Count(strings.Join(parts, " "), "a&lt;b"); got != 2000 {
		t.Fatalf("%d of 2000 pieces arrived", got)
	}
}
