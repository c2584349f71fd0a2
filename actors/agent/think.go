package agent

import "strings"

// splitThink moves <think>…</think> (and <thinking>…</thinking>) blocks out
// of content into reasoning. An unclosed block at the end counts as
// reasoning too: a model cut off mid-thought has not answered yet.
func splitThink(content string) (answer, reasoning string) {
	var ans, rsn strings.Builder
	rest := content
	for {
		open, tag := findOpen(rest)
		if open < 0 {
			ans.WriteString(rest)
			break
		}
		ans.WriteString(rest[:open])
		rest = rest[open+len(tag):]
		closeTag := "</" + tag[1:]
		end := strings.Index(rest, closeTag)
		if end < 0 {
			appendPart(&rsn, rest)
			break
		}
		appendPart(&rsn, rest[:end])
		rest = rest[end+len(closeTag):]
	}
	return strings.TrimSpace(ans.String()), rsn.String()
}

func findOpen(s string) (int, string) {
	best, tag := -1, ""
	for _, t := range []string{"<think>", "<thinking>"} {
		if i := strings.Index(s, t); i >= 0 && (best < 0 || i < best) {
			best, tag = i, t
		}
	}
	return best, tag
}

func appendPart(b *strings.Builder, s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString(s)
}
