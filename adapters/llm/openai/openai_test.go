package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

var history = []schema.Message{
	{Role: "user", Content: "list files"},
	{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "call_a", Type: "function", Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"ls"}`}}}},
	{Role: "tool", ToolCallID: "call_a", Name: "terminal", Content: "go.mod"},
	{Role: "user", Content: "thanks, now read it"},
}

func TestResponsesAPI(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Reasoning: "Read go.mod.", Content: "Reading.", ToolCalls: []llmtest.ToolCall{{ID: "call_b", Name: "read_file", Args: `{"path":"go.mod"}`}},
		Prompt: 900, Completion: 30, CacheRead: 512})
	defer srv.Close()
	p := openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	var text strings.Builder
	resp, err := p.Complete(context.Background(), model.Request{Model: "gpt-5", System: "You are Hermes.", Messages: history,
		Tools: []model.ToolSpec{{Name: "read_file", Description: "read", Parameters: map[string]any{"type": "object"}}}},
		func(d model.Delta) {
			if d.Kind == model.DeltaText {
				text.WriteString(d.Text)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Reading." || text.String() != "Reading." || resp.Reasoning != "Read go.mod." || resp.FinishReason != "tool_calls" {
		t.Fatalf("%+v", resp)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_b" || resp.ToolCalls[0].Function.Arguments != `{"path":"go.mod"}` {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	if resp.Usage != (schema.Usage{PromptTokens: 900, CompletionTokens: 30, CacheReadTokens: 512}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
	body := srv.Requests()[0].Body
	if body["instructions"] != "You are Hermes." || body["store"] != false {
		t.Fatalf("body %v", body)
	}
	input := body["input"].([]any)
	types := []string{}
	for _, it := range input {
		m := it.(map[string]any)
		typ, _ := m["type"].(string)
		if typ == "" {
			typ = "message:" + m["role"].(string)
		}
		types = append(types, typ)
	}
	if strings.Join(types, ",") != "message:user,function_call,function_call_output,message:user" {
		t.Fatalf("input items %v", types)
	}
}

func TestChatJSONFinishReasonsAndErrors(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "partial", Finish: "length"}, llmtest.Reply{Status: 401, ErrorBody: `{"error":{"message":"bad key","type":"invalid_request_error"}}`})
	defer srv.Close()
	p := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k", Provider: "openrouter"})
	resp, err := p.Complete(context.Background(), model.Request{Model: "m", Messages: history}, func(model.Delta) {})
	if err != nil || resp.FinishReason != "length" || resp.Content != "partial" {
		t.Fatalf("%+v %v", resp, err)
	}
	_, err = p.Complete(context.Background(), model.Request{Model: "m", Messages: history}, func(model.Delta) {})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "openrouter") {
		t.Fatalf("error %v", err)
	}
	req := srv.Requests()[0]
	if req.Header.Get("Authorization") != "Bearer k" {
		t.Fatalf("auth header %q", req.Header.Get("Authorization"))
	}
	msgs := req.Body["messages"].([]any)
	if len(msgs) != 4 || msgs[1].(map[string]any)["tool_calls"] == nil || msgs[2].(map[string]any)["tool_call_id"] != "call_a" {
		t.Fatalf("messages %v", msgs)
	}
}

// TestSSECommentsIgnored: a ping comment mid-stream (llama-cpp-python's
// server sends one every 15 s) must not break the answer.
func TestSSECommentsIgnored(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "still here", Ping: true})
	defer srv.Close()
	resp, err := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}).Complete(context.Background(),
		model.Request{Model: "m", Messages: history}, func(model.Delta) {})
	if err != nil || resp.Content != "still here" {
		t.Fatalf("%+v %v", resp, err)
	}
}
