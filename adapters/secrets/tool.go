package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hermes-go/hermes/actors/tool"
)

// Tool returns t with its output, its errors and its panics redacted.
// What a tool returns is what the agent loop records as ToolResultAdded
// and sends to the model, so wrapping every tool of the registry is the
// one place redaction has to happen: the event log, the projections, the
// search index and exports are all built from those events.
func (s *Set) Tool(t tool.Tool) tool.Tool { return redacting{Tool: t, s: s} }

// Tools wraps each of ts with Tool.
func (s *Set) Tools(ts ...tool.Tool) []tool.Tool {
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		out[i] = s.Tool(t)
	}
	return out
}

type redacting struct {
	tool.Tool
	s *Set
}

// Run implements tool.Tool.
func (r redacting) Run(ctx context.Context, args json.RawMessage) (string, error) {
	defer func() {
		if p := recover(); p != nil {
			panic(r.s.Redact(fmt.Sprint(p)))
		}
	}()
	out, err := r.Tool.Run(ctx, args)
	if err != nil {
		err = &redactedError{msg: r.s.Redact(err.Error()), err: err}
	}
	return r.s.Redact(out), err
}

// Close closes the wrapped tool when it holds something (background
// processes of the terminal).
func (r redacting) Close() error {
	if c, ok := r.Tool.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// redactedError reads as its redacted message and still unwraps to the
// original, so callers can tell a cancellation from a failure.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
