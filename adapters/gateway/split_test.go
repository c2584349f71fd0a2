package gateway_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/internal/markdown"
)

// measures is every Measure: each split case runs under each.
var measures = []gw.Measure{gw.Bytes, gw.Runes, gw.UTF16}

// mode is the options a platform sets besides its limit and measure.
type mode struct{ fences, escape bool }

var (
	plain  = mode{}
	fences = mode{fences: true}               // Slack, XMPP
	md     = mode{fences: true, escape: true} // Telegram, Matrix
)

func (o mode) String() string {
	switch o {
	case plain:
		return "plain"
	case fences:
		return "fences"
	}
	return "markdown"
}

func (o mode) splitter(limit int, m gw.Measure) gw.Splitter {
	return gw.Splitter{Limit: limit, Measure: m, Fences: o.fences, Escape: o.escape}
}

func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		s                   string
		bytes, runes, utf16 int
	}{
		{"", 0, 0, 0},
		{"abc", 3, 3, 3},
		{"é", 2, 1, 1},
		{"e\u0301", 3, 2, 2}, // e and a combining acute accent
		{"日本", 6, 2, 2},
		{"😀", 4, 1, 2},
		{"𝒳y", 5, 2, 3},
		{"a\xffb", 3, 3, 3}, // an invalid byte counts as one of each
	} {
		for m, want := range map[gw.Measure]int{gw.Bytes: tc.bytes, gw.Runes: tc.runes, gw.UTF16: tc.utf16} {
			if got := m.Len(tc.s); got != want {
				t.Errorf("%v.Len(%q) = %d, want %d", m, tc.s, got, want)
			}
		}
	}
	if s := gw.Measure(7).String(); s != "Measure(7)" {
		t.Errorf("an unknown measure is named %q", s)
	}
}

// TestSplit runs every case under every measure: want is the answer
// under each, unless by gives a measure its own.
func TestSplit(t *testing.T) {
	para := strings.Repeat
	code := "```py\n" + strings.Repeat("print(1)\n", 5) + "```" // 56 bytes
	for _, tc := range []struct {
		name  string
		mode  mode
		text  string
		limit int
		want  []string
		by    map[gw.Measure][]string
	}{
		{name: "fits", text: "hello\n\nworld", limit: 100, want: []string{"hello\n\nworld"}},
		{name: "blank", text: "\n\n  \n", limit: 100},
		{name: "spaces and newlines only", text: " \n ", limit: 100},
		{name: "outer newlines trimmed", text: "\n\nhello\n\n", limit: 100, want: []string{"hello"}},
		{name: "indentation kept, trailing space dropped", text: "    x := 1   ", limit: 20, want: []string{"    x := 1"}},
		{name: "paragraphs", text: para("a", 40) + "\n\n" + para("b", 40) + "\n\n" + para("c", 40), limit: 90,
			want: []string{para("a", 40) + "\n\n" + para("b", 40), para("c", 40)}},
		{name: "a paragraph break beats a later line break", text: para("a", 60) + "\n\n" + para("b", 20) + "\n" + para("c", 30), limit: 100,
			want: []string{para("a", 60), para("b", 20) + "\n" + para("c", 30)}},
		{name: "lines when no paragraph", text: para("a", 30) + "\n" + para("b", 30) + "\n" + para("c", 30), limit: 70,
			want: []string{para("a", 30) + "\n" + para("b", 30), para("c", 30)}},
		{name: "spaces when no line", text: "aaaa bbbb cccc dddd", limit: 10, want: []string{"aaaa bbbb", "cccc dddd"}},
		{name: "a space just past the limit", text: "aaaa bbbb cccc", limit: 9, want: []string{"aaaa bbbb", "cccc"}},
		{name: "spaces at a cut dropped", text: "aaaa bbbb     cccc", limit: 10, want: []string{"aaaa bbbb", "cccc"}},
		{name: "a space too early is not used", text: "a bbbbbbbbbbbbbbbbbb", limit: 10, want: []string{"a bbbbbbbb", "bbbbbbbbbb"}},
		{name: "a line break too early is not used", text: "a\nbbbbbbbbbbbbbbbbbb", limit: 10, want: []string{"a\nbbbbbbbb", "bbbbbbbbbb"}},
		{name: "hard cut", text: para("x", 25), limit: 10, want: []string{para("x", 10), para("x", 10), para("x", 5)}},
		{name: "a limit under a rune is raised", text: "abcdefghij", limit: 1, want: []string{"abcd", "efgh", "ij"}},
		{name: "two-byte runes", text: "ééééé", limit: 5,
			want: []string{"ééééé"}, by: map[gw.Measure][]string{gw.Bytes: {"éé", "éé", "é"}}},
		{name: "four-byte runes", text: "🚀🚀🚀", limit: 5, want: []string{"🚀🚀🚀"},
			by: map[gw.Measure][]string{gw.Bytes: {"🚀", "🚀", "🚀"}, gw.UTF16: {"🚀🚀", "🚀"}}},
		{name: "surrogate pairs count twice in UTF-16", text: para("😀", 6), limit: 4,
			want: []string{"😀😀😀😀", "😀😀"},
			by:   map[gw.Measure][]string{gw.Bytes: {"😀", "😀", "😀", "😀", "😀", "😀"}, gw.UTF16: {"😀😀", "😀😀", "😀😀"}}},
		{name: "combining marks", text: "e\u0301e\u0301e\u0301", limit: 4,
			want: []string{"e\u0301e\u0301", "e\u0301"}, by: map[gw.Measure][]string{gw.Bytes: {"e\u0301e", "\u0301e", "\u0301"}}},
		{name: "CJK at a space", text: "日本語 日本語 日本語", limit: 8,
			want: []string{"日本語 日本語", "日本語"}, by: map[gw.Measure][]string{gw.Bytes: {"日本", "語 日", "本語", "日本", "語"}}},
		{name: "a code block that fits moves whole", mode: fences, text: para("a", 20) + "\n" + code + "\nafter", limit: 70,
			want: []string{para("a", 20), code + "\nafter"}},
		{name: "without Fences a code block is text", text: para("a", 20) + "\n" + code + "\nafter", limit: 70,
			want: []string{para("a", 20) + "\n```py\n" + strings.Repeat("print(1)\n", 3) + "print(1)", "print(1)\n```\nafter"}},
		{name: "a cut after a code block", mode: fences, text: code + "\n\n" + para("z", 50), limit: 70, want: []string{code, para("z", 50)}},
		{name: "a long code block is closed and reopened", mode: fences, text: "```py\n" + strings.Repeat("x = 1\n", 8) + "```", limit: 40,
			want: []string{"```py\nx = 1\nx = 1\nx = 1\nx = 1\nx = 1\n```", "```py\nx = 1\nx = 1\nx = 1\n```"}},
		{name: "a tilde fence is reopened as one", mode: fences, text: "~~~\n" + strings.Repeat("y\n", 8) + "~~~", limit: 20,
			want: []string{"~~~\ny\ny\ny\ny\ny\ny\n~~~", "~~~\ny\ny\n~~~"}},
		{name: "a code line longer than a part", mode: fences, text: "```\n" + para("c", 30) + "\n```", limit: 20,
			want: []string{"```\n" + para("c", 12) + "\n```", "```\n" + para("c", 12) + "\n```", "```\n" + para("c", 6) + "\n```"}},
		{name: "a code line is not cut into a closing fence", mode: fences, text: "```\n" + para("`", 12) + "x\n```", limit: 16,
			want: []string{"```\n``\n```", "```\n``\n```", "```\n``\n```", "```\n" + para("`", 6) + "x\n```"}},
		{name: "a long info string is not repeated", mode: fences, text: "```" + para("i", 10) + "\n" + para("c\n", 8) + "```", limit: 24,
			want: []string{"```" + para("i", 10) + "\nc\nc\nc\n```", "```\nc\nc\nc\nc\nc\n```"}},
		{name: "a hard cut does not make a fence", mode: fences, text: para("a", 9) + "```x", limit: 9,
			want: []string{para("a", 8), "a```x"}},
		{name: "a space cut does not make a fence", mode: fences, text: "aaaaaaaa ```x", limit: 11,
			want: []string{"aaaaaaaa ``", "`x"}},
		{name: "a block with no line that fits starts the next part", mode: fences, text: "intro\n```\n" + para("c", 30) + "\n```", limit: 20,
			want: []string{"intro", "```\n" + para("c", 12) + "\n```", "```\n" + para("c", 12) + "\n```", "```\n" + para("c", 6) + "\n```"}},
		{name: "a heading a cut moves to a line start is escaped", mode: md, text: para("x", 10) + "# heading", limit: 10,
			want: []string{para("x", 10), "\\# heading"}},
		{name: "a bullet after a space cut is escaped", mode: md, text: "aaaaaaaa - item", limit: 9,
			want: []string{"aaaaaaaa", "\\- item"}},
		{name: "without Escape a marker is left", mode: fences, text: "aaaaaaaa - item", limit: 9,
			want: []string{"aaaaaaaa", "- item"}},
		{name: "a marker after a line cut is not escaped", mode: md, text: para("x", 8) + "\n# heading", limit: 10,
			want: []string{para("x", 8), "# heading"}},
	} {
		for _, m := range measures {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				want, ok := tc.by[m]
				if !ok {
					want = tc.want
				}
				got := tc.mode.splitter(tc.limit, m).Split(tc.text)
				if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
					t.Fatalf("Split(%q, %d)\n got %q\nwant %q", tc.text, tc.limit, got, want)
				}
				for _, p := range got {
					if m.Len(p) > max(tc.limit, utf8.UTFMax) {
						t.Fatalf("a part of %d %v over the limit %d: %q", m.Len(p), m, tc.limit, p)
					}
				}
			})
		}
	}
}

// TestSplitLongAnswer is the size of a real long answer: 9,000 characters
// with a code block become three Telegram messages, the block whole in
// one of them.
func TestSplitLongAnswer(t *testing.T) {
	text, block := gatewaytest.LongAnswer(24, 40, 50)
	const telegram = 4096
	parts := md.splitter(telegram, gw.UTF16).Split(text)
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	whole := 0
	for _, p := range parts {
		if n := gw.UTF16.Len(p); n > telegram {
			t.Fatalf("a part of %d units", n)
		}
		if strings.Contains(p, block) {
			whole++
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("a part with an unbalanced fence: %q", p)
		}
	}
	if whole != 1 {
		t.Fatalf("the code block is whole in %d parts", whole)
	}
}

// TestSplitProperties cuts random, Unicode-heavy Markdown under every
// measure and mode: every part is within the limit, valid UTF-8 (no rune,
// so no surrogate pair, is cut in two), not blank and without trailing
// whitespace; the parts put together give the text back but for the
// whitespace Split drops and (with Fences, Escape) the fence lines and
// backslashes it adds; and with Fences, no part leaves a code block open
// that the text closes.
func TestSplitProperties(t *testing.T) {
	pieces := []string{
		"word ", "longerword", " ", "  ", "\n", "\n\n", strings.Repeat("y", 30),
		"😀", "👍🏽", "🇫🇷", "𝒳", "é", "e\u0301", "n\u0303\u0323", "日本語", "中文 ", "한국어",
		"\n```sh\n", "\n```\n", "\n~~~\n", "```", "~~~", "echo hi\n", "# ", "> ", "- ",
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1500 {
		var b strings.Builder
		for range 1 + r.IntN(80) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		for _, m := range measures {
			for _, o := range []mode{plain, fences, md} {
				limit := 30 + r.IntN(100) // fence lines stay under half of it, as in real limits
				if o == plain && i%2 == 0 {
					limit = 1 + r.IntN(12) // down to under a rune
				}
				parts := o.splitter(limit, m).Split(text)
				where := func() string {
					return fmt.Sprintf("case %d, %v, %v: Split(%+q, %d) = %+q", i, m, o, text, limit, parts)
				}
				for _, p := range parts {
					if m.Len(p) > max(limit, utf8.UTFMax) || !utf8.ValidString(p) || strings.TrimSpace(p) == "" ||
						strings.TrimRight(p, " \t\n") != p || strings.HasPrefix(p, "\n") {
						t.Fatalf("%s: the part %q", where(), p)
					}
				}
				// The parts hold the text's characters in order. Plain,
				// they hold nothing else; with Fences they may hold the
				// fence lines Split adds too, with Escape backslashes.
				got, want := squash(strings.Join(parts, "\n")), squash(text)
				if o == plain && got != want || !subsequence(want, strings.ReplaceAll(got, "\\", "")) {
					t.Fatalf("%s: text lost or changed", where())
				}
				if !o.fences || fencesOpenAtEnd(text) || 4*longestFence(text) > limit {
					continue // the text itself leaves a block open, or has an absurd fence
				}
				for _, p := range parts {
					if fencesOpenAtEnd(p) {
						t.Fatalf("%s: the part %q leaves a code block open", where(), p)
					}
				}
			}
		}
	}
}

// subsequence says whether the runes of a appear in b in order.
func subsequence(a, b string) bool {
	for _, r := range a {
		i := strings.IndexRune(b, r)
		if i < 0 {
			return false
		}
		b = b[i+utf8.RuneLen(r):]
	}
	return true
}

// longestFence is the length in bytes of the longest fence line in s.
func longestFence(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if fenceLine(line) {
			n = max(n, len(line))
		}
	}
	return n
}

func fenceLine(line string) bool {
	_, ok := markdown.OpenFence(line)
	return ok
}

// fencesOpenAtEnd says whether s ends inside a fenced code block.
func fencesOpenAtEnd(s string) bool {
	var open *markdown.Fence
	for _, line := range strings.Split(s, "\n") {
		if open != nil {
			if open.Closes(line) {
				open = nil
			}
		} else if f, ok := markdown.OpenFence(line); ok {
			open = &f
		}
	}
	return open != nil
}

// BenchmarkSplit cuts a 9,000-character answer, and a Unicode-heavy one,
// at Telegram's limit under each measure; "len" is measuring the text
// alone, the baseline a split cannot beat.
func BenchmarkSplit(b *testing.B) {
	ascii, _ := gatewaytest.LongAnswer(24, 40, 50)
	unicode := strings.Repeat("日本語のテキスト 😀 e\u0301 𝒳 and some words.\n", 300)
	for _, in := range []struct{ name, text string }{{"ascii", ascii}, {"unicode", unicode}} {
		for _, m := range measures {
			sp := md.splitter(1000, m)
			b.Run(in.name+"/"+m.String(), func(b *testing.B) {
				b.SetBytes(int64(len(in.text)))
				parts := 0
				for b.Loop() {
					parts = len(sp.Split(in.text))
				}
				b.ReportMetric(float64(parts), "parts")
			})
			b.Run(in.name+"/"+m.String()+"/len", func(b *testing.B) {
				b.SetBytes(int64(len(in.text)))
				for b.Loop() {
					_ = m.Len(in.text)
				}
			})
		}
	}
}
