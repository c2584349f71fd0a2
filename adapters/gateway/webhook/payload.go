package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
	"text/template"
)

// errUnsupportedType is a payload neither JSON nor a form.
var errUnsupportedType = errors.New("unsupported content type: send application/json or application/x-www-form-urlencoded")

// decodePayload reads a JSON or form body. JSON numbers stay as written
// (12345678901 renders as such, not 1.2345678901e+10). A form whose only
// field is payload holding JSON — GitHub's form content type — is that
// JSON. An empty body is an empty object.
func decodePayload(contentType string, body []byte) (any, error) {
	mt := "application/json"
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, fmt.Errorf("content type %q: %w", contentType, err)
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "text/plain":
		return decodeJSON(body)
	case mt == "application/x-www-form-urlencoded":
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("form: %w", err)
		}
		if len(q) == 1 && len(q["payload"]) == 1 {
			if v, err := decodeJSON([]byte(q.Get("payload"))); err == nil {
				return v, nil
			}
		}
		m := make(map[string]any, len(q))
		for k, vs := range q {
			if len(vs) == 1 {
				m[k] = vs[0]
				continue
			}
			list := make([]any, len(vs))
			for i, v := range vs {
				list[i] = v
			}
			m[k] = list
		}
		return m, nil
	}
	return nil, errUnsupportedType
}

func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("JSON: more than one value in the body")
	}
	return v, nil
}

// meta is what a template may ask of the request besides its payload.
type meta struct {
	route, delivery, event string
}

// funcs are the functions of prompt templates. route, delivery and event
// are replaced per request.
func funcs(m meta) template.FuncMap {
	return template.FuncMap{
		"route":    func() string { return m.route },
		"delivery": func() string { return m.delivery },
		// event is GitHub's X-GitHub-Event (or X-Hermes-Event).
		"event": func() string { return m.event },
		// get looks up a dotted path ("pull_request.head.ref"), "" when
		// any part is missing: {{.a.b}} fails when a is missing.
		"get": func(v any, path string) any {
			for _, k := range strings.Split(path, ".") {
				obj, ok := v.(map[string]any)
				if !ok {
					return ""
				}
				if v, ok = obj[k]; !ok || v == nil {
					return ""
				}
			}
			return v
		},
		// json renders a value as indented JSON.
		"json": func(v any) (string, error) {
			b, err := json.MarshalIndent(v, "", "  ")
			return string(b), err
		},
		// default returns def when v is empty: {{default "none" .x}}.
		"default": func(def string, v any) any {
			if v == nil || v == "" {
				return def
			}
			return v
		},
		// truncate cuts a string to n bytes (on a rune boundary) with "…".
		"truncate": func(n int, s string) string { return clip(s, n) },
	}
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// compilePrompt parses a route's prompt; missing map keys render empty.
func compilePrompt(name, text string) (*template.Template, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	return template.New(name).Option("missingkey=zero").Funcs(funcs(meta{})).Parse(text)
}

// maxPromptBytes bounds what a template may render; the default prompt
// clips the payload it quotes to maxQuotedBytes.
const (
	maxPromptBytes = 256 << 10
	maxQuotedBytes = 32 << 10
)

// errPromptTooLong is a template that rendered more than maxPromptBytes.
var errPromptTooLong = fmt.Errorf("the prompt rendered more than %d KiB", maxPromptBytes>>10)

// render is the text of a turn: the route's template over the payload, or
// without one the payload itself, quoted.
func render(t *template.Template, payload any, m meta) (string, error) {
	if t == nil {
		b, err := json.MarshalIndent(payload, "", "  ")
		if err != nil {
			return "", err
		}
		quoted := string(b)
		if len(quoted) > maxQuotedBytes {
			quoted = clip(quoted, maxQuotedBytes) + "\n(clipped)"
		}
		head := "Webhook " + m.route
		if m.event != "" {
			head += " (" + m.event + " event)"
		}
		return head + " delivered this payload:\n\n```json\n" + quoted + "\n```", nil
	}
	t, err := t.Clone()
	if err != nil {
		return "", err
	}
	var buf limitedBuffer
	if err := t.Funcs(funcs(m)).Execute(&buf, payload); err != nil {
		if errors.Is(err, errPromptTooLong) {
			return "", errPromptTooLong
		}
		return "", err
	}
	// text/template prints a missing key (or a JSON null) of a map of
	// interfaces as "<no value>" even with missingkey=zero: a missing field
	// renders empty instead.
	text := strings.TrimSpace(strings.ReplaceAll(buf.String(), "<no value>", ""))
	if strings.HasPrefix(text, "/") {
		// The gateway would take it for a command (/new, /model, /stop),
		// and a payload's text is anyone's (a pull request's title).
		text = "Webhook " + m.route + ":\n" + text
	}
	return text, nil
}

// limitedBuffer fails writes past maxPromptBytes: a template that ranges
// over a large payload cannot grow without bound.
type limitedBuffer struct{ bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.Len()+len(p) > maxPromptBytes {
		return 0, errPromptTooLong
	}
	return l.Buffer.Write(p)
}
