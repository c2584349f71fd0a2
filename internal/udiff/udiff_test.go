package udiff

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "x\n", "x\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"from nothing", "", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"to nothing", "x\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"},
		{"no newline at end", "a\nb", "a\nc", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"far apart: two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+Y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("a", "b", tc.a, tc.b, 3); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

var header = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// apply applies a unified diff made by Unified to a, checking that the
// context and removed lines are a's and that the hunk headers count them.
func apply(t *testing.T, a, diff string) string {
	t.Helper()
	src := lines(a)
	var out []string
	at := 0
	ls := strings.Split(diff, "\n")
	for i := 2; i < len(ls) && ls[i] != ""; {
		m := header.FindStringSubmatch(ls[i])
		if m == nil {
			t.Fatalf("line %d %q is no hunk header", i, ls[i])
		}
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		aStart, aLen, bLen := num(m[1], 0), num(m[2], 1), num(m[4], 1)
		from := aStart - 1
		if aLen == 0 {
			from = aStart
		}
		out = append(out, src[at:from]...)
		at = from
		i++
		var seenA, seenB int
		for i < len(ls) && ls[i] != "" && ls[i][0] != '@' {
			l := ls[i][1:] + "\n"
			if i+1 < len(ls) && ls[i+1] == `\ No newline at end of file` {
				l = ls[i][1:]
				i++
			}
			kind := diffKind(ls, i)
			if kind != '+' {
				if at >= len(src) || src[at] != l {
					t.Fatalf("hunk line %q is not a's line %d", l, at+1)
				}
				at++
				seenA++
			}
			if kind != '-' {
				out = append(out, l)
				seenB++
			}
			i++
		}
		if seenA != aLen || seenB != bLen {
			t.Fatalf("hunk %s counts %d/%d lines, holds %d/%d", m[0], aLen, bLen, seenA, seenB)
		}
	}
	return strings.Join(append(out, src[at:]...), "")
}

// diffKind is the first byte of the diff line l was read from: the line at
// i, or the one before it when i is a "No newline" marker.
func diffKind(ls []string, i int) byte {
	if ls[i] == `\ No newline at end of file` {
		return ls[i-1][0]
	}
	return ls[i][0]
}

// lcs is the length of a longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestUnifiedRandom: on random texts, the diff applied to a gives b, and
// changes no more lines than a shortest edit script.
func TestUnifiedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		for range r.IntN(30) {
			fmt.Fprintf(&b, "%c\n", 'a'+r.IntN(4))
		}
		if r.IntN(5) == 0 {
			b.WriteString("end")
		}
		return b.String()
	}
	for i := range 500 {
		a, b := text(), text()
		d := Unified("a", "b", a, b, r.IntN(4))
		if got := apply(t, a, d); got != b {
			t.Fatalf("case %d: applied diff gives %q, want %q\n%s", i, got, b, d)
		}
		changed := 0
		for _, o := range script(lines(a), lines(b)) {
			if o.kind != ' ' {
				changed++
			}
		}
		if want := len(lines(a)) + len(lines(b)) - 2*lcs(lines(a), lines(b)); changed != want {
			t.Fatalf("case %d: %d lines changed, a shortest script changes %d", i, changed, want)
		}
	}
}
