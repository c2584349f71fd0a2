package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/stream"
)

// FuzzAnthropicStream feeds arbitrary bytes, as the body of a 200, through
// the provider's real decoding: the result is an error the ladder can
// classify or a well-formed response, never a panic or an allocation out
// of proportion to the input.
func FuzzAnthropicStream(f *testing.F) {
	f.Add([]byte(ev("message_start", start)+textStart(0)+textDelta(0, "Paris.")+stop), true)
	srv := llmtest.NewRaw()
	defer srv.Close()
	p := anthropic.New(anthropic.Options{BaseURL: srv.URL, StallTimeout: 5 * time.Second, CallTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		ct := "text/plain"
		if sse {
			ct = "text/event-stream"
		}
		srv.Set(ct, body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		streamed := 0
		resp, err := p.Complete(context.Background(), model.Request{Model: "claude", Messages: hi}, func(d model.Delta) { streamed += len(d.Text) })
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20+2048*uint64(len(body)) {
			t.Fatalf("%d bytes allocated for %d bytes of input", alloc, len(body))
		}
		if streamed > stream.MaxResponseBytes+stream.MaxNameBytes*stream.MaxToolCalls {
			t.Fatalf("%d bytes streamed", streamed)
		}
		if err != nil {
			var pe *model.ProviderError
			class := model.Classify(err)
			if !errors.As(err, &pe) || strings.Contains(err.Error(), "panicked") || class == model.ClassTimeout || class == model.ClassCallTimeout {
				t.Fatalf("error %T %v classified %s", err, err, class)
			}
			return
		}
		if !bytes.Contains(body, []byte("message_stop")) {
			t.Fatalf("an answer from a body without message_stop: %+v", resp)
		}
		switch resp.FinishReason {
		case "stop", "tool_calls", "length", "content_filter":
		default:
			t.Fatalf("finish reason %q", resp.FinishReason)
		}
		size := len(resp.Content) + len(resp.Reasoning)
		if len(resp.ToolCalls) > stream.MaxToolCalls || len(resp.Model) > stream.MaxNameBytes {
			t.Fatalf("over the bounds: %d calls, model %d bytes", len(resp.ToolCalls), len(resp.Model))
		}
		for _, c := range resp.ToolCalls {
			if c.Type != "function" || len(c.ID) > stream.MaxNameBytes || len(c.Function.Name) > stream.MaxNameBytes || c.Function.Arguments == "" {
				t.Fatalf("tool call %+v", c)
			}
			size += len(c.Function.Arguments)
		}
		if size > stream.MaxResponseBytes {
			t.Fatalf("%d bytes of answer", size)
		}
	})
}
