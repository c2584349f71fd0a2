package openai_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/llm/stream"
)

// fuzzStream feeds body, as the HTTP body of a 200, through p's real
// decoding and checks what comes out: an error the ladder can classify,
// or a well-formed response; never a panic, and never an allocation
// out of proportion to the input.
func fuzzStream(t *testing.T, srv *llmtest.RawServer, p model.Provider, body []byte, sse bool, terminators ...string) {
	ct := "text/plain"
	if sse {
		ct = "text/event-stream"
	}
	srv.Set(ct, body)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	streamed := 0
	resp, err := p.Complete(context.Background(), model.Request{Model: "m", Messages: history}, func(d model.Delta) { streamed += len(d.Text) })
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20+2048*uint64(len(body)) {
		t.Fatalf("%d bytes allocated for %d bytes of input", alloc, len(body))
	}
	if streamed > stream.MaxResponseBytes+stream.MaxNameBytes*stream.MaxToolCalls {
		t.Fatalf("%d bytes streamed", streamed)
	}
	if err != nil {
		var pe *model.ProviderError
		// The server answered at once and in full: nothing may look like a
		// stall or an unreachable server.
		class := model.Classify(err)
		if !errors.As(err, &pe) || strings.Contains(err.Error(), "panicked") || class == model.ClassTimeout || class == model.ClassCallTimeout {
			t.Fatalf("error %T %v classified %s", err, err, model.Classify(err))
		}
		return
	}
	if err := wellFormed(resp); err != "" {
		t.Fatalf("%s: %+v", err, resp)
	}
	found := false
	for _, term := range terminators {
		found = found || bytes.Contains(body, []byte(term))
	}
	if !found {
		t.Fatalf("an answer from a body without %v: %+v", terminators, resp)
	}
}

// wellFormed says what is wrong with a response, or "".
func wellFormed(r model.Response) string {
	switch r.FinishReason {
	case "stop", "tool_calls", "length", "content_filter":
	default:
		return "finish reason " + r.FinishReason
	}
	size := len(r.Content) + len(r.Reasoning)
	if len(r.ToolCalls) > stream.MaxToolCalls {
		return "too many tool calls"
	}
	for _, c := range r.ToolCalls {
		if c.Type != "function" || len(c.ID) > stream.MaxNameBytes || len(c.Function.Name) > stream.MaxNameBytes {
			return "bad tool call"
		}
		size += len(c.Function.Arguments)
	}
	if size > stream.MaxResponseBytes || len(r.Model) > stream.MaxNameBytes {
		return "over the bounds"
	}
	return ""
}

func FuzzChatStream(f *testing.F) {
	f.Add([]byte(chunk(`{"content":"Paris."}`, "stop")+"data: [DONE]\n\n"), true)
	srv := llmtest.NewRaw()
	defer srv.Close()
	p := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", StallTimeout: 5 * time.Second, CallTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		fuzzStream(t, srv, p, body, sse, "finish_reason", "[DONE]")
	})
}

func FuzzResponsesStream(f *testing.F) {
	f.Add([]byte(`data: {"type":"response.completed","sequence_number":1,"response":{"id":"r","model":"m","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Paris."}]}]}}`+"\n\n"), true)
	srv := llmtest.NewRaw()
	defer srv.Close()
	p := openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1", StallTimeout: 5 * time.Second, CallTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		fuzzStream(t, srv, p, body, sse, "response.completed", "response.incomplete")
	})
}
