package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// redact applies l.Redact to text the model wrote, when it is set.
func (l *Loop) redact(text string) string {
	if l.Redact == nil || text == "" {
		return text
	}
	return l.Redact(text)
}

// redactArgs applies redact to the strings and numbers of the JSON text
// args and leaves the rest byte for byte, so that what is recorded is
// still the JSON the model sent, less its secrets. A string is redacted
// decoded (a key written with \u escapes is still found) and written back
// only if redaction changed it; a number that redaction changes (a
// numeric password) becomes a string. Text that is not JSON (arguments
// the loop could not repair) is redacted as a whole.
func redactArgs(redact func(string) string, args string) string {
	if redact == nil || args == "" {
		return args
	}
	if !json.Valid([]byte(args)) {
		return redact(args)
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(args); {
		c := args[i]
		switch {
		case c == '"':
			end := stringEnd(args, i)
			lit := args[i:end]
			var s string
			if err := json.Unmarshal([]byte(lit), &s); err != nil {
				return redact(args) // not reached: args is valid JSON
			}
			if r := redact(s); r != s {
				lit, changed = quoteJSON(r), true
			}
			b.WriteString(lit)
			i = end
		case c == '-' || (c >= '0' && c <= '9'):
			end := i + 1
			for end < len(args) && strings.IndexByte("0123456789+-.eE", args[end]) >= 0 {
				end++
			}
			lit := args[i:end]
			if r := redact(lit); r != lit {
				lit, changed = quoteJSON(r), true
			}
			b.WriteString(lit)
			i = end
		default:
			b.WriteByte(c)
			i++
		}
	}
	if !changed {
		return args
	}
	return b.String()
}

// stringEnd returns the index just past the JSON string literal that
// starts at s[i] (a quote); s is valid JSON.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

// quoteJSON writes s as a JSON string literal, leaving <, > and & as they
// are (the arguments are not HTML).
func quoteJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
