package compress

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/hermes-go/hermes/schema"
)

// Counter counts a message's tokens: with the model's real tokenizer when
// one is known in Go (OpenAI's o200k and cl100k encodings, embedded in the
// binary, no download), else characters/4. Counts are cached by content.
type Counter struct {
	enc   tokenizer.Codec
	mu    sync.Mutex
	cache map[string]int
}

// NewCounter returns the counter for model.
func NewCounter(model string) *Counter {
	c := &Counter{cache: map[string]int{}}
	name := baseName(model)
	var enc tokenizer.Encoding
	switch {
	case strings.HasPrefix(name, "gpt-4o"), strings.HasPrefix(name, "gpt-4.1"), strings.HasPrefix(name, "gpt-5"),
		strings.HasPrefix(name, "o1"), strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4"):
		enc = tokenizer.O200kBase
	case strings.HasPrefix(name, "gpt-4"), strings.HasPrefix(name, "gpt-3.5"):
		enc = tokenizer.Cl100kBase
	}
	if enc != "" {
		if codec, err := tokenizer.Get(enc); err == nil {
			c.enc = codec
		}
	}
	return c
}

// Exact reports whether a real tokenizer is used.
func (c *Counter) Exact() bool { return c.enc != nil }

func (c *Counter) text(s string) int {
	if c.enc == nil || s == "" {
		return len(s) / 4
	}
	c.mu.Lock()
	n, ok := c.cache[s]
	c.mu.Unlock()
	if ok {
		return n
	}
	n, err := c.enc.Count(s)
	if err != nil {
		n = len(s) / 4
	}
	c.mu.Lock()
	if len(c.cache) > 20000 {
		clear(c.cache)
	}
	c.cache[s] = n
	c.mu.Unlock()
	return n
}

// Message counts one message, with the chat format's overhead.
func (c *Counter) Message(m schema.Message) int {
	n := c.text(m.Content) + c.text(m.Reasoning) + 4
	for _, tc := range m.ToolCalls {
		n += c.text(tc.Function.Name) + c.text(tc.Function.Arguments) + 8
	}
	return n
}

// All counts messages.
func (c *Counter) All(msgs []schema.Message) int {
	n := 0
	for _, m := range msgs {
		n += c.Message(m)
	}
	return n
}
