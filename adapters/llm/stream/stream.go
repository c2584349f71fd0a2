// Package stream holds what the model adapters share about reading a
// streamed response from a server they cannot trust: the bounds on
// everything taken from the wire, the guard on the server-sent-events
// body, the record of its terminator, and the errors a broken stream turns
// into. A hostile or broken server gets an error the recovery ladder can
// classify, never a panic, an allocation sized by a number it sent, or a
// truncated answer passed off as complete.
package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hermes-go/hermes/actors/model"
)

// Bounds on one response. They are far above what any model produces
// (the largest output limits are around 128k tokens, well under 1 MB of
// text), so only a broken or hostile server reaches them.
const (
	// MaxToolCalls bounds the tool calls of one response, and so the
	// indexes a chat.completions stream may address.
	MaxToolCalls = 128
	// MaxContentBlocks bounds the content blocks of an Anthropic message
	// (text, thinking and tool_use blocks together).
	MaxContentBlocks = 2*MaxToolCalls + 64
	// MaxResponseBytes bounds the text, reasoning and tool arguments of one
	// response together, as accumulated or streamed.
	MaxResponseBytes = 4 << 20
	// MaxNameBytes bounds a tool name, a tool-call id or a model name.
	MaxNameBytes = 1 << 10
	// MaxEventBytes bounds one SSE line and one SSE event: the Responses
	// API's response.completed carries the whole output at once, plus the
	// echoed instructions and tools.
	MaxEventBytes = 16 << 20
	// MaxEventValues bounds the JSON values (objects, arrays, array and
	// object members) of one event. The SDKs decode an event into structs
	// that take a kilobyte or two per value, so `[{},{},…]` would otherwise
	// turn a few megabytes on the wire into gigabytes.
	MaxEventValues = 20_000
	// MaxErrorBodyBytes bounds the body of an HTTP error the SDKs read
	// whole.
	MaxErrorBodyBytes = 1 << 20
)

// Malformed returns an error wrapping model.ErrMalformedStream.
func Malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", model.ErrMalformedStream, fmt.Sprintf(format, args...))
}

// Cut returns an error wrapping model.ErrStreamCut; what names what was
// missing ("no finish_reason and no [DONE]").
func Cut(what string) error {
	return fmt.Errorf("%w (%s)", model.ErrStreamCut, what)
}

// Index checks an index taken from the wire against [0, n).
func Index(what string, i int64, n int) error {
	if i < 0 || i >= int64(n) {
		return Malformed("%s %d out of range (0 to %d)", what, i, n-1)
	}
	return nil
}

// Name checks a name or id taken from the wire.
func Name(what, s string) error {
	if len(s) > MaxNameBytes {
		return Malformed("%s of %d bytes (limit %d)", what, len(s), MaxNameBytes)
	}
	return nil
}

// Budget counts what an adapter accumulates from one response.
type Budget struct {
	bytes, calls int
}

// Text adds n bytes of text, reasoning or arguments.
func (b *Budget) Text(n int) error {
	b.bytes += n
	if b.bytes > MaxResponseBytes {
		return Malformed("the response is over %d bytes of text, reasoning and tool arguments", MaxResponseBytes)
	}
	return nil
}

// Call counts one more tool call.
func (b *Budget) Call() error {
	b.calls++
	if b.calls > MaxToolCalls {
		return Malformed("more than %d tool calls in one response", MaxToolCalls)
	}
	return nil
}

// Fail wraps an error found by an adapter itself (a bound, a missing
// terminator) for the ladder.
func Fail(provider string, err error) error {
	return &model.ProviderError{Provider: provider, Message: err.Error(), Err: err}
}

// Interrupted is the error of a call that its watchdog or its caller
// cancelled, or nil.
func Interrupted(ctx context.Context, provider string, wd *model.Watchdog) error {
	if c := wd.Cause(); c != nil {
		return &model.ProviderError{Provider: provider, Transport: true, Message: c.Error(), Err: c}
	}
	return ctx.Err()
}

// Wrap turns a non-HTTP error of a streaming call into an
// model.ProviderError: a malformed body as such, a broken connection after
// the response began as a cut stream, anything earlier as a transport
// failure. Errors the server reported with a status are the adapters'.
func Wrap(provider string, w *Watch, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, model.ErrMalformedStream):
		return Fail(provider, err)
	case errors.As(err, &syn) || errors.As(err, &typ):
		return Fail(provider, fmt.Errorf("%w: an event is not valid JSON: %w", model.ErrMalformedStream, err))
	case w.Opened():
		return Fail(provider, fmt.Errorf("%w: %w", model.ErrStreamCut, err))
	}
	return &model.ProviderError{Provider: provider, Transport: true, Message: err.Error(), Err: err}
}

// Recovered turns the value of recover() into an error: the SDKs decode
// the server's bytes, and a panic there on hostile input must fail the
// call, not the process. Use it in a deferred function of Complete.
func Recovered(provider string, r any) error {
	if r == nil {
		return nil
	}
	return Fail(provider, fmt.Errorf("%w: decoding the stream panicked: %v", model.ErrMalformedStream, r))
}
