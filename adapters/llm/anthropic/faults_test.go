package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/stream"
	"github.com/hermes-go/hermes/schema"
)

var hi = []schema.Message{{Role: "user", Content: "hi"}}

func ev(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

const start = `{"type":"message_start","message":{"id":"msg","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`

func textStart(i int) string {
	return ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
}

func textDelta(i int64, s string) string {
	return ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, i, s))
}

func toolStart(i int) string {
	return ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":"terminal","input":{}}}`, i, i))
}

var stop = ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`) + ev("message_stop", `{"type":"message_stop"}`)

func raw(t *testing.T, ct, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func complete(t *testing.T, o anthropic.Options) (model.Response, error, string, uint64) {
	t.Helper()
	var streamed strings.Builder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := anthropic.New(o).Complete(context.Background(), model.Request{Model: "claude", Messages: hi}, func(d model.Delta) {
		if d.Kind == model.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	runtime.ReadMemStats(&after)
	return resp, err, streamed.String(), after.TotalAlloc - before.TotalAlloc
}

func wantClass(t *testing.T, err error, class model.ErrorClass, text string) {
	t.Helper()
	if got := model.Classify(err); got != class || !strings.Contains(fmt.Sprint(err), text) {
		t.Fatalf("error %v classified %s, want %s mentioning %q", err, got, class, text)
	}
}

// TestCutStream: without message_stop there is no answer, even with the
// stop reason already sent. Before, the text so far was the answer.
func TestCutStream(t *testing.T) {
	for name, r := range map[string]llmtest.Reply{
		"cut mid-answer":     {CutAfter: 3},
		"connection dropped": {CutAfter: 3, Reset: true},
		"no message_stop":    {NoTerminator: true},
	} {
		t.Run(name, func(t *testing.T) {
			r.Content = "The capital of France is Paris."
			srv := llmtest.New(r)
			defer srv.Close()
			resp, err, streamed, _ := complete(t, anthropic.Options{BaseURL: srv.URL})
			wantClass(t, err, model.ClassStreamCut, "stream was cut")
			if resp.Content != "" || streamed == "" {
				t.Fatalf("response %+v streamed %q", resp, streamed)
			}
		})
	}
}

// TestHostileIndexesAndCounts: content-block indexes and counts from the
// wire are checked before anything is addressed or allocated.
func TestHostileIndexesAndCounts(t *testing.T) {
	var tools strings.Builder
	for i := range stream.MaxToolCalls + 1 {
		tools.WriteString(toolStart(i))
	}
	var blocks strings.Builder
	for i := range stream.MaxContentBlocks + 1 {
		blocks.WriteString(textStart(i))
	}
	cases := map[string]struct{ body, text string }{
		"delta at 999999999":   {ev("message_start", start) + textStart(0) + textDelta(999999999, "x") + stop, "content_block_delta index 999999999 out of range"},
		"delta at -1":          {ev("message_start", start) + textStart(0) + textDelta(-1, "x") + stop, "index -1 out of range"},
		"start at 999999999":   {ev("message_start", start) + textStart(999999999) + stop, "content block index 999999999"},
		"start with a gap":     {ev("message_start", start) + textStart(0) + textStart(2) + stop, "index 2 out of range (0 to 1)"},
		"start again at 0":     {ev("message_start", start) + textStart(0) + textStart(0) + stop, "for index 0, expected 1"},
		"stop at 5":            {ev("message_start", start) + textStart(0) + ev("content_block_stop", `{"type":"content_block_stop","index":5}`) + stop, "index 5 out of range"},
		"129 tool calls":       {ev("message_start", start) + tools.String() + stop, "more than 128 tool calls"},
		"too many blocks":      {ev("message_start", start) + blocks.String() + stop, "content block index 320"},
		"delta before start":   {textDelta(0, "x") + stop, "before message_start"},
		"two message_starts":   {ev("message_start", start) + ev("message_start", start) + stop, "a second message_start"},
		"text into a tool":     {ev("message_start", start) + toolStart(0) + textDelta(0, "x") + stop, "a text_delta for a tool_use block"},
		"text over the budget": {ev("message_start", start) + textStart(0) + strings.Repeat(textDelta(0, strings.Repeat("x", 1<<20)), 5) + stop, "over 4194304 bytes"},
		"not JSON":             {ev("message_start", `{"type":`), "not valid JSON"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err, _, alloc := complete(t, anthropic.Options{BaseURL: raw(t, "text/event-stream", c.body)})
			wantClass(t, err, model.ClassMalformed, c.text)
			if resp.Content != "" || alloc > 256<<20 {
				t.Fatalf("response %+v after %d MB", resp, alloc>>20)
			}
		})
	}
}

func TestWholeAnswerFromRawEvents(t *testing.T) {
	body := ev("message_start", start) + ": comment\n\n" + ev("ping", `{"type":"ping"}`) + textStart(0) + textDelta(0, "Par") + textDelta(0, "is.") +
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"terminal","input":{"command":"ls"}}}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7,"cache_read_input_tokens":4}}`) + ev("message_stop", `{"type":"message_stop"}`)
	resp, err, streamed, _ := complete(t, anthropic.Options{BaseURL: raw(t, "text/event-stream", body)})
	if err != nil || resp.Content != "Paris." || streamed != "Paris." || resp.FinishReason != "tool_calls" || resp.Model != "claude" {
		t.Fatalf("%+v %v", resp, err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Function.Arguments != `{"command":"ls"}` {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	if resp.Usage != (schema.Usage{PromptTokens: 14, CompletionTokens: 7, CacheReadTokens: 4}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
}

func TestNotAStream(t *testing.T) {
	_, err, _, _ := complete(t, anthropic.Options{BaseURL: raw(t, "text/html", "<html><title>Bad gateway</title></html>")})
	wantClass(t, err, model.ClassMalformed, "Bad gateway")
}

func TestEndlessStreams(t *testing.T) {
	cases := map[string]struct {
		r     llmtest.Reply
		class model.ErrorClass
	}{
		"ping events":  {llmtest.Reply{PingEvery: 10 * time.Millisecond}, model.ClassTimeout},
		"empty deltas": {llmtest.Reply{TrickleEvery: 10 * time.Millisecond}, model.ClassCallTimeout},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(c.r)
			defer srv.Close()
			start := time.Now()
			_, err, _, _ := complete(t, anthropic.Options{BaseURL: srv.URL, StallTimeout: 200 * time.Millisecond, CallTimeout: 400 * time.Millisecond})
			wantClass(t, err, c.class, "")
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	}
}
