package openai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

// toolCallStream is a streamed answer holding one terminal call, chunked
// as OpenAI streams one: role, the call's id and name, its arguments in
// pieces, the finish reason, usage and [DONE].
var toolCallStream = chunk(`{"role":"assistant","content":null}`, "") +
	chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"terminal","arguments":""}}]}`, "") +
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\""}}]}`, "") +
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":":\"echo step 7\"}"}}]}`, "") +
	chunk(`{}`, "tool_calls") +
	`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":12,"total_tokens":912}}` + "\n\n" +
	"data: [DONE]\n\n"

// BenchmarkCompleteToolCall is one model step of a turn 20 calls deep
// through Chat.Complete (the request encoded, sent, the stream parsed),
// against a loopback server answering a fixed tool-call stream, beside
// BenchmarkCompletePlainPOST: the same exchange as the floor of a tool call
// makes it (net/http, the body posted and read whole, no parsing). What
// one costs beyond the other is the provider's per-step overhead.
func BenchmarkCompleteToolCall(b *testing.B) {
	srv := benchServer(b)
	p := openai.NewChat(openai.Options{BaseURL: srv + "/v1", APIKey: "sk-bench"})
	req := benchRequest(20)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Complete(context.Background(), req, func(model.Delta) {})
		if err != nil || len(resp.ToolCalls) != 1 {
			b.Fatalf("%v %+v", err, resp)
		}
	}
}

// BenchmarkCompletePlainPOST is BenchmarkCompleteToolCall's baseline.
func BenchmarkCompletePlainPOST(b *testing.B) {
	srv := benchServer(b)
	body := bytes.Repeat([]byte("x"), 12000)
	c := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Post(srv+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func benchServer(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, toolCallStream)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func benchRequest(k int) model.Request {
	req := model.Request{Model: "m", System: strings.Repeat("You are Hermes. ", 400), Messages: []schema.Message{{Role: "user", Content: "go"}}}
	for i := 0; i < 18; i++ {
		req.Tools = append(req.Tools, model.ToolSpec{Name: "tool" + string(rune('a'+i)), Description: strings.Repeat("does things ", 20),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}})
	}
	for i := 0; i < k; i++ {
		req.Messages = append(req.Messages,
			schema.Message{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "call_" + string(rune('a'+i%26)), Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"echo step"}`}}}},
			schema.Message{Role: "tool", ToolCallID: "call_x", Content: "step\n[exit code: 0]"})
	}
	return req
}
