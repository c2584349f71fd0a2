package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	redact := func(s string) string {
		s = strings.ReplaceAll(s, "s3cr3t-value", "[REDACTED:K]")
		return strings.ReplaceAll(s, "31415926535", "[REDACTED:PIN]")
	}
	cases := []struct{ name, in, want string }{
		{"nothing to redact keeps the bytes", `{ "a" : [1, 2.5e3, -4], "b":true, "c":null, "d":"x<y&z" }`, `{ "a" : [1, 2.5e3, -4], "b":true, "c":null, "d":"x<y&z" }`},
		{"value", `{"token":"s3cr3t-value"}`, `{"token":"[REDACTED:K]"}`},
		{"inside a longer value, layout kept", `{"cmd": "curl -H 'X: s3cr3t-value' a<b", "n": 2}`, `{"cmd": "curl -H 'X: [REDACTED:K]' a<b", "n": 2}`},
		{"escaped in the JSON", `{"k":"s3cr3t\u002dvalue"}`, `{"k":"[REDACTED:K]"}`},
		{"next to escaped quotes", `{"k":"say \"s3cr3t-value\" now"}`, `{"k":"say \"[REDACTED:K]\" now"}`},
		{"nested and in a key", `{"s3cr3t-value":{"l":["a","s3cr3t-value"]}}`, `{"[REDACTED:K]":{"l":["a","[REDACTED:K]"]}}`},
		{"a number becomes a string", `{"pin":31415926535,"n":7}`, `{"pin":"[REDACTED:PIN]","n":7}`},
		{"top-level string", `"s3cr3t-value"`, `"[REDACTED:K]"`},
		{"not JSON: redacted as text", `{"k":"s3cr3t-value"`, `{"k":"[REDACTED:K]"`},
		{"empty", ``, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := redactArgs(redact, c.in)
			if got != c.want {
				t.Fatalf("redactArgs(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
			if json.Valid([]byte(c.in)) && !json.Valid([]byte(got)) {
				t.Fatalf("valid JSON became invalid: %s", got)
			}
		})
	}
	if got := redactArgs(nil, `{"k":"s3cr3t-value"}`); got != `{"k":"s3cr3t-value"}` {
		t.Fatalf("no redactor changed the arguments: %s", got)
	}
}
