package openai

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/hermes-go/hermes/actors/model"
)

// chatBody encodes a streaming chat.completions request straight to JSON:
// the same document the SDK's params would marshal to (TestChatBodyMatchesSDK
// holds them equal), without the SDK's reflective, union-by-union encoding,
// which re-encoded the whole history on every step of a turn and was the
// largest CPU cost of a tool call (issue 30). The message shapes are the ones
// messages builds for the SDK; the request carries what Complete sets.
func chatBody(req model.Request, imgs map[string][]byte) ([]byte, error) {
	return encodeChat(req, imgs, nil)
}

// encodeChat is chatBody with the tools' parameter schemas encoded through
// schemas (nil encodes them every time).
func encodeChat(req model.Request, imgs map[string][]byte, schemas *schemaCache) ([]byte, error) {
	n := 256 + len(req.System)
	for i := range req.Messages {
		m := &req.Messages[i]
		n += 96 + len(m.Content) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 96 + len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	if !req.NoTools {
		for _, t := range req.Tools {
			n += 64 + len(t.Name) + len(t.Description) + schemas.size(t.Parameters)
		}
	}
	b := make([]byte, 0, n+n/8)
	b = append(b, `{"stream":true,"stream_options":{"include_usage":true}`...)
	if req.Model != "" { // the SDK leaves an empty model out
		b = append(b, `,"model":`...)
		b = appendString(b, req.Model)
	}
	if req.MaxTokens > 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	b = append(b, `,"messages":[`...)
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	if req.System != "" {
		sep()
		b = appendRoleContent(b, "system", req.System)
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case "user":
			sep()
			if len(m.Images) == 0 {
				b = appendRoleContent(b, "user", m.Content)
				continue
			}
			b = append(b, `{"role":"user","content":[`...)
			part := false
			if m.Content != "" {
				b = appendTextPart(b, m.Content)
				part = true
			}
			for _, ref := range m.Images {
				if part {
					b = append(b, ',')
				}
				part = true
				data, ok := imgs[ref.SHA256]
				if !ok {
					b = appendTextPart(b, model.ImageText(ref))
					continue
				}
				b = append(b, `{"type":"image_url","image_url":{"url":"data:`...)
				b = appendStringBody(b, ref.MediaType)
				b = append(b, `;base64,`...)
				b = base64.StdEncoding.AppendEncode(b, data)
				b = append(b, `"}}`...)
			}
			b = append(b, "]}"...)
		case "tool":
			sep()
			b = append(b, `{"role":"tool","content":`...)
			b = appendString(b, m.Content)
			b = append(b, `,"tool_call_id":`...)
			b = appendString(b, m.ToolCallID)
			b = append(b, '}')
		case "system":
			sep()
			b = appendRoleContent(b, "system", m.Content)
		case "assistant":
			sep()
			b = append(b, `{"role":"assistant"`...)
			if m.Content != "" || len(m.ToolCalls) == 0 {
				b = append(b, `,"content":`...)
				b = appendString(b, m.Content)
			}
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j, tc := range m.ToolCalls {
					if j > 0 {
						b = append(b, ',')
					}
					b = append(b, `{"id":`...)
					b = appendString(b, tc.ID)
					b = append(b, `,"type":"function","function":{"name":`...)
					b = appendString(b, tc.Function.Name)
					b = append(b, `,"arguments":`...)
					b = appendString(b, tc.Function.Arguments)
					b = append(b, "}}"...)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
	}
	b = append(b, ']')
	if !req.NoTools && len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, s := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = appendString(b, s.Name)
			b = append(b, `,"description":`...)
			b = appendString(b, s.Description)
			if s.Parameters != nil {
				p, err := schemas.encode(s.Parameters)
				if err != nil {
					return nil, err
				}
				b = append(b, `,"parameters":`...)
				b = append(b, p...)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendRoleContent(b []byte, role, content string) []byte {
	b = append(b, `{"role":"`...)
	b = append(b, role...)
	b = append(b, `","content":`...)
	b = appendString(b, content)
	return append(b, '}')
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendStringBody appends s escaped for the inside of a JSON string, as
// encoding/json escapes it: quotes, backslashes and control characters
// escaped, <, > and & as \u escapes, invalid UTF-8 replaced by U+FFFD, and
// U+2028/U+2029 escaped.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// schemaCache keeps the JSON of tools' parameter schemas: the same tools go
// with every step of every turn, and encoding their schemas (maps of maps)
// was most of what remained of a request body's cost. A schema is known by
// its map, which the toolbox reads from its tool once (tool.NewTools: most
// tools build their schema afresh in Spec, which made every step a miss)
// and never changes (providers read it from every session at once, so
// changing it would race anyway); the cache forgets everything when it
// grows past a bound.
type schemaCache struct {
	mu sync.Mutex
	m  map[uintptr]schemaEntry
}

type schemaEntry struct {
	params map[string]any // held so that its address is not reused
	json   []byte
}

const schemaCacheMax = 4096

// size is the length of params' encoding when it is cached, else a guess.
func (c *schemaCache) size(params map[string]any) int {
	if c == nil {
		return 256
	}
	key := reflect.ValueOf(params).Pointer()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok {
		return 256
	}
	return len(e.json)
}

func (c *schemaCache) encode(params map[string]any) ([]byte, error) {
	if c == nil {
		return json.Marshal(params)
	}
	key := reflect.ValueOf(params).Pointer()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return e.json, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= schemaCacheMax {
		c.m = map[uintptr]schemaEntry{}
	}
	c.m[key] = schemaEntry{params: params, json: b}
	c.mu.Unlock()
	return b, nil
}
