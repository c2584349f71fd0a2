package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/hermes-go/hermes/schema"
)

// InterruptedResult is the tool result that closes a call whose result
// never came (the process died, or the turn was interrupted).
// InterruptedResult is what the model reads for such a call.
const InterruptedResult = "[interrupted: the tool call did not finish, no result was recorded]"

// RepairHistory makes a message list valid for any provider: user and
// assistant alternate, an assistant message with tool calls is followed by
// exactly one tool message per call (missing ones are closed as
// interrupted), orphan tool messages are dropped, consecutive messages of
// the same role are merged, and the conversation starts with a user.
func RepairHistory(msgs []schema.Message) []schema.Message {
	out := make([]schema.Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case "tool":
			continue // only reached for orphans: results are taken with their call
		case "assistant":
			if len(m.ToolCalls) > 0 {
				if len(out) == 0 {
					out = append(out, schema.Message{Role: "user", Content: "(continue)"})
				}
				if last := &out[len(out)-1]; last.Role == "assistant" {
					if len(last.ToolCalls) > 0 {
						// Two tool-calling turns in a row: keep both, the
						// first is already closed by its results.
					} else {
						m.Content = joinText(last.Content, m.Content)
						m.Reasoning = joinText(last.Reasoning, m.Reasoning)
						out = out[:len(out)-1]
					}
				}
				out = append(out, m)
				results := map[string]schema.Message{}
				j := i + 1
				for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
					if _, dup := results[msgs[j].ToolCallID]; !dup {
						results[msgs[j].ToolCallID] = msgs[j]
					}
				}
				for _, tc := range m.ToolCalls {
					r, ok := results[tc.ID]
					if !ok {
						r = schema.Message{Role: "tool", ToolCallID: tc.ID, Name: tc.Function.Name, Content: InterruptedResult}
					}
					out = append(out, r)
				}
				i = j - 1
				continue
			}
			if len(out) == 0 {
				out = append(out, schema.Message{Role: "user", Content: "(continue)"})
			}
		case "user":
		default:
			continue // a stray system message in history: the prefix is separate
		}
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.Role == m.Role && len(last.ToolCalls) == 0 && len(m.ToolCalls) == 0 {
				last.Content = joinText(last.Content, m.Content)
				last.Reasoning = joinText(last.Reasoning, m.Reasoning)
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// DanglingCalls returns the tool calls of the last assistant message that
// have no result after it: what a crash mid-turn leaves behind.
func DanglingCalls(msgs []schema.Message) []schema.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			if len(msgs[i].ToolCalls) == 0 {
				return nil
			}
			done := map[string]bool{}
			for _, m := range msgs[i+1:] {
				if m.Role == "tool" {
					done[m.ToolCallID] = true
				}
			}
			var out []schema.ToolCall
			for _, tc := range msgs[i].ToolCalls {
				if !done[tc.ID] {
					out = append(out, tc)
				}
			}
			return out
		}
		if msgs[i].Role == "user" {
			return nil
		}
	}
	return nil
}

// RepairToolName maps a name the model produced to a registered one:
// normalise case, '-' and spaces to '_', CamelCase to snake_case, drop a
// "_tool" suffix, cut at stray quote or angle-bracket characters, then a
// fuzzy match. ok is false when nothing is close enough.
func RepairToolName(name string, known []string) (string, bool) {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	if set[name] {
		return name, true
	}
	n := name
	if i := strings.IndexAny(n, "\"'`<>"); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimSpace(n)
	for _, cand := range []string{n, strings.ToLower(n), snake(n)} {
		c := strings.Trim(strings.NewReplacer("-", "_", " ", "_").Replace(cand), "_")
		for {
			if set[c] {
				return c, true
			}
			next := strings.Trim(strings.TrimSuffix(c, "tool"), "_")
			if next == c || next == "" {
				break
			}
			c = next
		}
	}
	target := strings.Trim(strings.NewReplacer("-", "_", " ", "_").Replace(snake(n)), "_")
	for strings.HasSuffix(target, "_tool") {
		target = strings.TrimSuffix(target, "_tool")
	}
	best, bestD := "", 1<<30
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	for _, k := range sorted {
		if d := levenshtein(target, k); d < bestD {
			best, bestD = k, d
		}
	}
	// Accept small edits: two for ordinary names, a third for long ones.
	limit := 2
	if len(target) >= 10 {
		limit = 3
	}
	if best != "" && bestD <= limit && bestD < len(target) {
		return best, true
	}
	return "", false
}

// snake turns CamelCase into snake_case.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) && rs[i-1] != '_' {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// levenshtein is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions (read_flie) each
// count one.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// RepairArguments returns valid JSON object arguments: empty means {};
// trailing commas, unclosed braces and brackets, and raw control characters
// inside strings are repaired. An error means the arguments are ambiguous.
func RepairArguments(args string) (string, bool, error) {
	s := strings.TrimSpace(args)
	if s == "" {
		return "{}", true, nil
	}
	if validObject(s) {
		return s, false, nil
	}
	var b strings.Builder
	var stack []byte
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			case c == '\n':
				b.WriteString(`\n`)
				continue
			case c == '\r':
				b.WriteString(`\r`)
				continue
			case c == '\t':
				b.WriteString(`\t`)
				continue
			case c < 0x20:
				fmt.Fprintf(&b, `\u%04x`, c)
				continue
			}
			b.WriteByte(c)
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return "", false, fmt.Errorf("unbalanced %q at byte %d", c, i)
			}
			stack = stack[:len(stack)-1]
			// Drop a trailing comma before the closer.
			str := strings.TrimRight(b.String(), " \t\r\n")
			if strings.HasSuffix(str, ",") {
				b.Reset()
				b.WriteString(str[:len(str)-1])
			}
		}
		b.WriteByte(c)
	}
	if inStr {
		b.WriteByte('"')
	}
	out := strings.TrimRight(b.String(), " \t\r\n")
	out = strings.TrimSuffix(out, ",")
	for i := len(stack) - 1; i >= 0; i-- {
		out += string(stack[i])
	}
	if !validObject(out) {
		return "", false, fmt.Errorf("arguments are not a JSON object")
	}
	return out, true, nil
}

func validObject(s string) bool {
	var v map[string]any
	return json.Unmarshal([]byte(s), &v) == nil
}
