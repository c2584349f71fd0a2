// Package openai implements the agent's Provider port over the official
// openai-go SDK: the chat-completions API (streaming), which most
// OpenAI-compatible servers speak, and the Responses API (codex_responses).
package openai

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/respjson"
	"github.com/openai/openai-go/shared"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
)

// Options configure a client.
type Options struct {
	// Provider is the name reported in events (openai, openrouter, ...).
	Provider string
	BaseURL  string
	APIKey   string
	// Headers are extra request headers.
	Headers map[string]string
	// StallTimeout cancels a stream that sends no chunk for this long
	// (default 60 s; negative disables).
	StallTimeout time.Duration
}

func (o Options) stall() time.Duration {
	if o.StallTimeout == 0 {
		return 60 * time.Second
	}
	return o.StallTimeout
}

func (o Options) client() openai.Client {
	opts := []option.RequestOption{option.WithMaxRetries(0), dropSSEComments()}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	key := o.APIKey
	if key == "" {
		key = "none" // local servers need no key, the SDK needs some
	}
	opts = append(opts, option.WithAPIKey(key))
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return openai.NewClient(opts...)
}

// Chat speaks chat.completions with streaming.
type Chat struct {
	name   string
	client openai.Client
	stall  time.Duration
}

// NewChat returns a chat-completions provider.
func NewChat(o Options) *Chat {
	name := o.Provider
	if name == "" {
		name = "openai"
	}
	return &Chat{name: name, client: o.client(), stall: o.stall()}
}

func (c *Chat) Name() string    { return c.name }
func (c *Chat) APIMode() string { return agent.ModeChatCompletions }

// Messages converts history to the SDK's message params.
func Messages(system string, msgs []schema.Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for _, m := range msgs {
		switch m.Role {
		case "user":
			out = append(out, openai.UserMessage(m.Content))
		case "tool":
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case "system":
			out = append(out, openai.SystemMessage(m.Content))
		case "assistant":
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

func tools(specs []agent.ToolSpec) []openai.ChatCompletionToolParam {
	var out []openai.ChatCompletionToolParam
	for _, s := range specs {
		out = append(out, openai.ChatCompletionToolParam{Function: shared.FunctionDefinitionParam{
			Name: s.Name, Description: openai.String(s.Description), Parameters: shared.FunctionParameters(s.Parameters)}})
	}
	return out
}

// Complete implements agent.Provider.
func (c *Chat) Complete(ctx context.Context, req agent.Request, onDelta func(agent.Delta)) (agent.Response, error) {
	params := openai.ChatCompletionNewParams{
		Model:         req.Model,
		Messages:      Messages(req.System, req.Messages),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if !req.NoTools && len(req.Tools) > 0 {
		params.Tools = tools(req.Tools)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	sctx, wd := agent.NewWatchdog(ctx, c.stall)
	defer wd.Stop()
	stream := c.client.Chat.Completions.NewStreaming(sctx, params)
	defer stream.Close()
	var resp agent.Response
	var content, reasoning strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	var calls []*partial
	for stream.Next() {
		wd.Touch()
		ch := stream.Current()
		if ch.Model != "" {
			resp.Model = ch.Model
		}
		if ch.JSON.Usage.Valid() {
			resp.Usage = schema.Usage{PromptTokens: ch.Usage.PromptTokens, CompletionTokens: ch.Usage.CompletionTokens,
				CacheReadTokens: ch.Usage.PromptTokensDetails.CachedTokens}
		}
		for _, choice := range ch.Choices {
			d := choice.Delta
			if d.Content != "" {
				content.WriteString(d.Content)
				onDelta(agent.Delta{Kind: agent.DeltaText, Text: d.Content})
			}
			if r := extraString(d.JSON.ExtraFields, "reasoning_content", "reasoning"); r != "" {
				reasoning.WriteString(r)
				onDelta(agent.Delta{Kind: agent.DeltaReasoning, Text: r})
			}
			for _, tc := range d.ToolCalls {
				for int(tc.Index) >= len(calls) {
					calls = append(calls, &partial{})
				}
				p := calls[tc.Index]
				if tc.ID != "" {
					p.id = tc.ID
				}
				if tc.Function.Name != "" {
					p.name += tc.Function.Name
					onDelta(agent.Delta{Kind: agent.DeltaToolCall, Text: p.name})
				}
				p.args.WriteString(tc.Function.Arguments)
			}
			if choice.FinishReason != "" {
				resp.FinishReason = normaliseFinish(choice.FinishReason)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return agent.Response{}, wrapErr(ctx, c.name, wd, err)
	}
	if wd.Stalled() {
		return agent.Response{}, wrapErr(ctx, c.name, wd, agent.ErrStalled)
	}
	resp.Content, resp.Reasoning = content.String(), reasoning.String()
	for _, p := range calls {
		if p.name == "" && p.args.Len() == 0 {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, schema.ToolCall{ID: p.id, Type: "function",
			Function: schema.FunctionCall{Name: p.name, Arguments: p.args.String()}})
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	return resp, nil
}

// extraString reads a string field the SDK does not model (reasoning_content
// of DeepSeek, llama.cpp, vLLM; reasoning of OpenRouter).
func extraString(fields map[string]respjson.Field, names ...string) string {
	for _, n := range names {
		f, ok := fields[n]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func normaliseFinish(f string) string {
	switch f {
	case "tool_calls", "function_call":
		return "tool_calls"
	case "length":
		return "length"
	case "content_filter":
		return "content_filter"
	}
	return "stop"
}
