// Package udiff writes the unified diff of two texts, line by line, as
// diff -u and git diff show it.
package udiff

import (
	"fmt"
	"strings"
)

// op is one line of the edit script: ' ' kept, '-' only in a, '+' only
// in b.
type op struct {
	kind byte
	line string
}

// lines splits text after each newline; the last line may lack one.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// script is a shortest edit script from a to b (Myers' O((N+M)D)
// algorithm).
func script(a, b []string) []op {
	n, m := len(a), len(b)
	most := n + m
	off := most + 1
	v := make([]int, 2*most+3)
	var trace [][]int
	done := false
	for d := 0; d <= most && !done; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				done = true
				break
			}
		}
	}
	var rev []op
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			rev = append(rev, op{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if x == px {
			rev = append(rev, op{'+', b[py]})
		} else {
			rev = append(rev, op{'-', a[px]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, op{' ', a[x-1]})
		x, y = x-1, y-1
	}
	out := make([]op, len(rev))
	for i, o := range rev {
		out[len(rev)-1-i] = o
	}
	return out
}

// Unified returns the unified diff that turns a (named aName) into b
// (named bName), with ctx lines of context around each change; "" when
// the texts are equal.
func Unified(aName, bName, a, b string, ctx int) string {
	if a == b {
		return ""
	}
	ops := script(lines(a), lines(b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	// aAt[i], bAt[i]: lines of a and b before ops[i].
	aAt, bAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, o := range ops {
		aAt[i+1], bAt[i+1] = aAt[i], bAt[i]
		if o.kind != '+' {
			aAt[i+1]++
		}
		if o.kind != '-' {
			bAt[i+1]++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i // one past the last change of the hunk
		for j := i; j < len(ops) && j < end+2*ctx+1; j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			}
		}
		stop := min(len(ops), end+ctx)
		aLen, bLen := aAt[stop]-aAt[start], bAt[stop]-bAt[start]
		aStart, bStart := aAt[start], bAt[start]
		if aLen > 0 {
			aStart++
		}
		if bLen > 0 {
			bStart++
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(aStart, aLen), span(bStart, bLen))
		for _, o := range ops[start:stop] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return out.String()
}

func span(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
