// Package anthropic implements the agent's Provider port over the official
// anthropic-sdk-go Messages API, streaming, with cache_control breakpoints
// on the stable prefix so that repeated calls of a session hit the cache.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
)

// DefaultMaxTokens is sent when a request names no limit: the Messages API
// requires one.
const DefaultMaxTokens = 8192

// Options configure the client.
type Options struct {
	Provider string
	BaseURL  string
	APIKey   string
	// StallTimeout cancels a stream silent for this long (default 60 s).
	StallTimeout time.Duration
}

// Provider speaks the Anthropic Messages API.
type Provider struct {
	name   string
	client sdk.Client
	stall  time.Duration
}

// New returns an Anthropic provider.
func New(o Options) *Provider {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(o.APIKey)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	name := o.Provider
	if name == "" {
		name = "anthropic"
	}
	stall := o.StallTimeout
	if stall == 0 {
		stall = 60 * time.Second
	}
	return &Provider{name: name, client: sdk.NewClient(opts...), stall: stall}
}

func (p *Provider) Name() string    { return p.name }
func (p *Provider) APIMode() string { return agent.ModeAnthropic }

// Params builds the request; exported for tests of the wire shape.
func Params(req agent.Request) sdk.MessageNewParams {
	params := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: int64(req.MaxTokens)}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if req.System != "" {
		// Breakpoint 1: the system prompt, identical on every call.
		params.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	if !req.NoTools {
		for i, s := range req.Tools {
			t := sdk.ToolParam{Name: s.Name, Description: sdk.String(s.Description), InputSchema: inputSchema(s.Parameters)}
			if i == len(req.Tools)-1 {
				// Breakpoint 2: the tool list, the rest of the stable prefix.
				t.CacheControl = sdk.NewCacheControlEphemeralParam()
			}
			params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &t})
		}
	}
	params.Messages = messages(req.Messages)
	// Breakpoints 3 and 4: the last two user turns, so the conversation so
	// far is read from the cache on the next call.
	marked := 0
	for i := len(params.Messages) - 1; i >= 0 && marked < 2; i-- {
		m := &params.Messages[i]
		if m.Role != sdk.MessageParamRoleUser || len(m.Content) == 0 {
			continue
		}
		if cc := m.Content[len(m.Content)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			marked++
		}
	}
	return params
}

func inputSchema(p map[string]any) sdk.ToolInputSchemaParam {
	s := sdk.ToolInputSchemaParam{Properties: p["properties"]}
	if req, ok := p["required"].([]string); ok {
		s.Required = req
	} else if req, ok := p["required"].([]any); ok {
		for _, r := range req {
			if str, ok := r.(string); ok {
				s.Required = append(s.Required, str)
			}
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s
}

// messages converts OpenAI-shaped history: tool results become tool_result
// blocks of a user message, merged with a following user text so that the
// roles alternate as the API requires.
func messages(msgs []schema.Message) []sdk.MessageParam {
	var out []sdk.MessageParam
	appendUser := func(b sdk.ContentBlockParamUnion) {
		if n := len(out); n > 0 && out[n-1].Role == sdk.MessageParamRoleUser {
			out[n-1].Content = append(out[n-1].Content, b)
			return
		}
		out = append(out, sdk.NewUserMessage(b))
	}
	for _, m := range msgs {
		switch m.Role {
		case "user", "system":
			if m.Content != "" {
				appendUser(sdk.NewTextBlock(m.Content))
			}
		case "tool":
			appendUser(sdk.NewToolResultBlock(m.ToolCallID, m.Content, false))
		case "assistant":
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				var input any = json.RawMessage(tc.Function.Arguments)
				if !json.Valid([]byte(tc.Function.Arguments)) || tc.Function.Arguments == "" {
					input = map[string]any{}
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, input, tc.Function.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, sdk.NewTextBlock("(no content)"))
			}
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
	}
	return out
}

// Complete implements agent.Provider.
func (p *Provider) Complete(ctx context.Context, req agent.Request, onDelta func(agent.Delta)) (agent.Response, error) {
	sctx, wd := agent.NewWatchdog(ctx, p.stall)
	defer wd.Stop()
	stream := p.client.Messages.NewStreaming(sctx, Params(req))
	defer stream.Close()
	var acc sdk.Message
	for stream.Next() {
		wd.Touch()
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			return agent.Response{}, fmt.Errorf("%s messages stream: %w", p.name, err)
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				onDelta(agent.Delta{Kind: agent.DeltaToolCall, Text: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				onDelta(agent.Delta{Kind: agent.DeltaText, Text: ev.Delta.Text})
			case "thinking_delta":
				onDelta(agent.Delta{Kind: agent.DeltaReasoning, Text: ev.Delta.Thinking})
			}
		}
	}
	if err := stream.Err(); err != nil {
		return agent.Response{}, p.wrap(ctx, wd, err)
	}
	resp := agent.Response{Model: string(acc.Model)}
	var text, thinking strings.Builder
	for _, b := range acc.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			thinking.WriteString(b.Thinking)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, schema.ToolCall{ID: b.ID, Type: "function", Function: schema.FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	resp.Content, resp.Reasoning = text.String(), thinking.String()
	u := acc.Usage
	resp.Usage = schema.Usage{PromptTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, CompletionTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
	switch acc.StopReason {
	case "tool_use":
		resp.FinishReason = "tool_calls"
	case "max_tokens":
		resp.FinishReason = "length"
	case "refusal":
		resp.FinishReason = "content_filter"
	default:
		resp.FinishReason = "stop"
	}
	return resp, nil
}

func (p *Provider) wrap(ctx context.Context, wd *agent.Watchdog, err error) error {
	if wd.Stalled() {
		return &agent.ProviderError{Provider: p.name, Transport: true, Message: agent.ErrStalled.Error(), Err: agent.ErrStalled}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apierr *sdk.Error
	if errors.As(err, &apierr) {
		pe := &agent.ProviderError{Provider: p.name, Status: apierr.StatusCode, Message: apierr.RawJSON(), Err: err}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(apierr.RawJSON()), &body) == nil && body.Error.Message != "" {
			pe.Message = body.Error.Message
		}
		if apierr.Response != nil {
			pe.RetryAfter = agent.ParseRetryAfter(apierr.Response.Header.Get("Retry-After"), time.Now())
		}
		return pe
	}
	return &agent.ProviderError{Provider: p.name, Transport: true, Message: err.Error(), Err: err}
}
