package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// argKeys are the arguments that say most about a call, in order of
// preference: the command a terminal runs, the file a file tool reads...
var argKeys = []string{"command", "path", "file_path", "query", "goal", "url", "urls", "name", "pattern", "action", "code", "content", "todos"}

// argsPreview is a short, one-line view of a tool call's JSON arguments.
func argsPreview(args string, n int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil || len(m) == 0 {
		return oneLine(args, n)
	}
	for _, k := range argKeys {
		if v, ok := m[k]; ok {
			s := valueText(v)
			if len(m) > 1 && k != "command" && k != "path" && k != "query" && k != "goal" {
				s = k + "=" + s
			}
			return oneLine(s, n)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+valueText(m[k]))
	}
	return oneLine(strings.Join(parts, " "), n)
}

func valueText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		if len(t) == 1 {
			return valueText(t[0])
		}
		return fmt.Sprintf("[%d items]", len(t))
	case map[string]any:
		b, _ := json.Marshal(t)
		return string(b)
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

// oneLine is s on one line (its first non-blank line, with a mark when
// more follow), cut to n runes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	more := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		more = strings.TrimSpace(s[i:]) != ""
		s = strings.TrimSpace(s[:i])
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
	if more {
		s += " …"
	}
	r := []rune(s)
	if n > 1 && len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// duration is d as people read it: 340ms, 2.4s, 1m05s.
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// discarded tells the ladder's status that the answer streamed so far is
// thrown away (a stream cut mid-answer, retried): the display starts the
// answer again. The wording is the ladder's (see model.Ladder); the
// package's tests check it against the real ladder.
func discarded(status string) bool {
	return strings.Contains(status, "partial answer is discarded")
}
