package anthropic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

func TestStreamingWithToolsAndCache(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Reasoning: "Let me look.", Content: "Checking.", ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "read_file", Args: `{"path":"go.mod"}`}},
		Prompt: 5000, Completion: 40, CacheRead: 4000, CacheWrite: 500})
	defer srv.Close()
	p := anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-test"})
	var streamed strings.Builder
	resp, err := p.Complete(context.Background(), model.Request{
		Model:  "claude-sonnet-4-5",
		System: "You are Hermes.",
		Tools:  []model.ToolSpec{{Name: "read_file", Description: "read", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}}},
		Messages: []schema.Message{
			{Role: "user", Content: "what is in go.mod?"},
			{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "toolu_0", Type: "function", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"README.md"}`}}}},
			{Role: "tool", ToolCallID: "toolu_0", Name: "read_file", Content: "# Hermes"},
			{Role: "user", Content: "and go.mod?"},
		},
	}, func(d model.Delta) {
		if d.Kind == model.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Checking." || resp.Reasoning != "Let me look." || streamed.String() != "Checking." {
		t.Fatalf("response %+v streamed %q", resp, streamed.String())
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_1" || resp.ToolCalls[0].Function.Arguments != `{"path":"go.mod"}` || resp.FinishReason != "tool_calls" {
		t.Fatalf("tool calls %+v finish %s", resp.ToolCalls, resp.FinishReason)
	}
	if resp.Usage != (schema.Usage{PromptTokens: 5000, CompletionTokens: 40, CacheReadTokens: 4000, CacheWriteTokens: 500}) {
		t.Fatalf("usage not normalised: %+v", resp.Usage)
	}
	req := srv.Requests()[0]
	if req.Header.Get("X-Api-Key") != "sk-ant-test" || req.Path != "/v1/messages" {
		t.Fatalf("request %s %v", req.Path, req.Header)
	}
	body := req.Body
	sys := body["system"].([]any)[0].(map[string]any)
	if sys["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Fatalf("system prompt without a cache breakpoint: %v", sys)
	}
	tools := body["tools"].([]any)
	if tools[0].(map[string]any)["cache_control"] == nil {
		t.Fatal("tool list without a cache breakpoint")
	}
	msgs := body["messages"].([]any)
	roles := ""
	for _, m := range msgs {
		roles += m.(map[string]any)["role"].(string)[:1]
	}
	if roles != "uau" {
		t.Fatalf("roles %s: tool results must merge into one user message", roles)
	}
	last := msgs[2].(map[string]any)["content"].([]any)
	if last[0].(map[string]any)["type"] != "tool_result" || last[1].(map[string]any)["type"] != "text" {
		t.Fatalf("last user content %v", last)
	}
	if last[1].(map[string]any)["cache_control"] == nil {
		t.Fatal("last user turn without a cache breakpoint")
	}
	if fmt.Sprint(body["max_tokens"]) != "8192" {
		t.Fatalf("max_tokens %v", body["max_tokens"])
	}
}

func TestLoopOverAnthropic(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "cut ", Finish: "length"}, llmtest.Reply{Content: "off"})
	defer srv.Close()
	p := anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "k"})
	resp, err := p.Complete(context.Background(), model.Request{Model: "claude-haiku-4-5", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	if err != nil || resp.FinishReason != "length" || resp.Content != "cut " {
		t.Fatalf("%+v %v", resp, err)
	}
	srv.Add(llmtest.Reply{Status: 529, ErrorBody: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	srv.Remaining()
	p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	_, err = p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	if err == nil || !strings.Contains(err.Error(), "529") {
		t.Fatalf("an error status was not reported: %v", err)
	}
}
