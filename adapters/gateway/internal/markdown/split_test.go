package markdown

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// telegramMax is Telegram's limit on a message, in UTF-16 code units.
const telegramMax = 4096

func TestSplit(t *testing.T) {
	para := func(c string, n int) string { return strings.Repeat(c, n) }
	code := "```py\n" + strings.Repeat("print(1)\n", 5) + "```" // 56 bytes
	for _, tc := range []struct {
		name  string
		md    string
		limit int
		want  []string
	}{
		{"fits", "hello\n\nworld", 100, []string{"hello\n\nworld"}},
		{"blank", "\n\n  \n", 100, nil},
		{"outer newlines trimmed", "\n\nhello\n\n", 100, []string{"hello"}},
		{"paragraphs", para("a", 40) + "\n\n" + para("b", 40) + "\n\n" + para("c", 40), 90,
			[]string{para("a", 40) + "\n\n" + para("b", 40), para("c", 40)}},
		{"a paragraph break beats a later line break", para("a", 60) + "\n\n" + para("b", 20) + "\n" + para("c", 30), 100,
			[]string{para("a", 60), para("b", 20) + "\n" + para("c", 30)}},
		{"lines when no paragraph", para("a", 30) + "\n" + para("b", 30) + "\n" + para("c", 30), 70,
			[]string{para("a", 30) + "\n" + para("b", 30), para("c", 30)}},
		{"spaces when no line", "aaaa bbbb cccc dddd", 10, []string{"aaaa bbbb", "cccc dddd"}},
		{"hard cut", para("x", 25), 10, []string{para("x", 10), para("x", 10), para("x", 5)}},
		{"a code block that fits moves whole", para("a", 20) + "\n" + code + "\nafter", 70,
			[]string{para("a", 20), code + "\nafter"}},
		{"a cut after a code block", code + "\n\n" + para("z", 50), 70, []string{code, para("z", 50)}},
		{"a long code block is closed and reopened", "```py\n" + strings.Repeat("x = 1\n", 8) + "```", 40,
			[]string{"```py\nx = 1\nx = 1\nx = 1\nx = 1\nx = 1\n```", "```py\nx = 1\nx = 1\nx = 1\n```"}},
		{"surrogate pairs count twice", strings.Repeat("😀", 6), 4, []string{"😀😀", "😀😀", "😀😀"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.md, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Fatalf("Split(%q, %d)\n got %q\nwant %q", tc.md, tc.limit, got, tc.want)
			}
			for _, p := range got {
				if UTF16Len(p) > tc.limit {
					t.Fatalf("part of %d units over the limit %d: %q", UTF16Len(p), tc.limit, p)
				}
			}
		})
	}
}

// TestSplitLongAnswer is the size of a real long answer: 9,000 characters
// with a code block become three messages, the block whole in one of them.
func TestSplitLongAnswer(t *testing.T) {
	md, block := longAnswer()
	parts := Split(md, telegramMax)
	if len(parts) != 3 {
		t.Fatalf("%d parts (%v), want 3", len(parts), partLens(parts))
	}
	whole := 0
	for _, p := range parts {
		if UTF16Len(p) > telegramMax {
			t.Fatalf("a part of %d units", UTF16Len(p))
		}
		if strings.Contains(p, block) {
			whole++
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("a part with an unbalanced Fence: %q", p)
		}
	}
	if whole != 1 {
		t.Fatalf("the code block is whole in %d parts", whole)
	}
}

// longAnswer is about 9,000 characters of prose around a code block; it
// returns the block too.
func longAnswer() (string, string) {
	var b strings.Builder
	sentence := "The quick brown fox jumps over the lazy dog, and the **dog** does not mind <at all> & sleeps. "
	for i := range 24 {
		b.WriteString(sentence)
		if i%4 == 3 {
			b.WriteString("\n\n")
		}
	}
	block := "```go\n" + strings.Repeat("for i := 0; i < n && ok; i++ { total += i << 1 }\n", 40) + "```"
	b.WriteString(block + "\n\n")
	for i := range 50 {
		b.WriteString(sentence)
		if i%5 == 4 {
			b.WriteString("\n\n")
		}
	}
	return strings.TrimSpace(b.String()), block
}

func partLens(parts []string) []int {
	n := make([]int, len(parts))
	for i, p := range parts {
		n[i] = UTF16Len(p)
	}
	return n
}

// TestSplitProperties cuts random Markdown: no part is over the limit or
// broken UTF-8, every Fence opened in a part is closed in it, and without
// code blocks no character other than the whitespace at a cut is lost.
func TestSplitProperties(t *testing.T) {
	pieces := []string{"word ", "longerword", " ", "\n", "\n\n", "😀", "é", "```sh\n", "\n```\n", "echo hi\n", strings.Repeat("y", 30), "# ", "> ", "- "}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(60) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		md := b.String()
		limit := 30 + r.IntN(100) // Fence lines stay under half of it, as under 4096
		parts := Split(md, limit)
		for _, p := range parts {
			if UTF16Len(p) > limit || !utf8.ValidString(p) || strings.TrimSpace(p) == "" {
				t.Fatalf("case %d: Split(%q, %d) gave the part %q", i, md, limit, p)
			}
		}
		if !strings.Contains(md, "```") {
			squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
			// A cut inside a line may escape a block marker it moved to
			// the start of a line: the only character Split adds.
			joined := strings.ReplaceAll(strings.Join(parts, ""), "\\", "")
			if squash(joined) != squash(md) {
				t.Fatalf("case %d: Split(%q, %d) lost text: %q", i, md, limit, parts)
			}
			continue
		}
		if fencesOpenAtEnd(md) {
			continue // the Markdown itself leaves a block open
		}
		for _, p := range parts {
			if fencesOpenAtEnd(p) {
				t.Fatalf("case %d: Split(%q, %d): part %q leaves a code block open", i, md, limit, p)
			}
		}
	}
}

// fencesOpenAtEnd says whether s ends inside a fenced code block.
func fencesOpenAtEnd(s string) bool {
	var open *Fence
	for _, line := range strings.Split(s, "\n") {
		if open != nil {
			if open.Closes(line) {
				open = nil
			}
		} else if f, ok := OpenFence(line); ok {
			open = &f
		}
	}
	return open != nil
}
