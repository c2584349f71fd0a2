// Package anthropic implements the agent's Provider port over the official
// anthropic-sdk-go Messages API, streaming, with cache_control breakpoints
// on the stable prefix so that repeated calls of a session hit the cache.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
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
	// StallTimeout cancels a stream silent for this long (default
	// model.DefaultStallTimeout; negative disables).
	StallTimeout time.Duration
	// CallTimeout bounds a whole call, however lively its stream
	// (default model.DefaultCallTimeout; negative disables).
	CallTimeout time.Duration
	// FirstByteTimeout bounds the wait for the server's answer (default
	// model.DefaultFirstByteTimeout; negative disables).
	FirstByteTimeout time.Duration
}

// Provider speaks the Anthropic Messages API.
type Provider struct {
	name     string
	client   sdk.Client
	timeouts model.Timeouts
}

// New returns an Anthropic provider.
func New(o Options) *Provider {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(o.APIKey),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			return stream.Guard(req, next)
		})}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	name := o.Provider
	if name == "" {
		name = "anthropic"
	}
	t := model.Timeouts{FirstByte: o.FirstByteTimeout, Stall: o.StallTimeout, Total: o.CallTimeout}.OrDefaults()
	return &Provider{name: name, client: sdk.NewClient(opts...), timeouts: t}
}

func (p *Provider) Name() string    { return p.name }
func (p *Provider) APIMode() string { return model.ModeAnthropic }

// Params builds the request; exported for tests of the wire shape. Images
// go as text placeholders here (see params).
func Params(req model.Request) sdk.MessageNewParams { return params(req, nil) }

// params builds the request with the bytes of the images the messages
// name (by SHA-256), sent as base64 image blocks.
func params(req model.Request, imgs map[string][]byte) sdk.MessageNewParams {
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
	params.Messages = messages(req.Messages, imgs)
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
func messages(msgs []schema.Message, imgs map[string][]byte) []sdk.MessageParam {
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
			for _, ref := range m.Images {
				if b, ok := imgs[ref.SHA256]; ok {
					appendUser(sdk.NewImageBlockBase64(ref.MediaType, base64.StdEncoding.EncodeToString(b)))
				} else {
					appendUser(sdk.NewTextBlock(model.ImageText(ref)))
				}
			}
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

// Complete implements model.Provider. The events are accumulated here,
// within the bounds of package stream, and a stream that ends without
// message_stop is an error, not an answer.
func (p *Provider) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (resp model.Response, err error) {
	defer func() {
		if e := stream.Recovered(p.name, recover()); e != nil {
			resp, err = model.Response{}, e
		}
	}()
	sctx, wd := model.NewWatchdog(ctx, p.timeouts)
	defer wd.Stop()
	sctx, watch := stream.Start(sctx, wd)
	imgs, err := req.Images(ctx)
	if err != nil {
		return model.Response{}, err
	}
	s := p.client.Messages.NewStreaming(sctx, params(req, imgs))
	defer s.Close()
	var acc messageAcc
	for s.Next() {
		wd.Touch()
		if err := acc.add(s.Current(), onDelta); err != nil {
			return model.Response{}, stream.Fail(p.name, err)
		}
		if acc.stopped {
			break
		}
	}
	if err := s.Err(); err != nil {
		return model.Response{}, p.wrap(ctx, wd, watch, err)
	}
	if err := stream.Interrupted(ctx, p.name, wd); err != nil {
		return model.Response{}, err
	}
	if !acc.stopped {
		return model.Response{}, stream.Fail(p.name, stream.Cut("no message_stop"))
	}
	return acc.response(), nil
}

// messageAcc accumulates Messages stream events. The SDK's own
// Message.Accumulate appends each delta to a string (quadratic in the
// number of deltas) and re-encodes a whole block on every
// content_block_stop, which a hostile stream can repeat at will.
type messageAcc struct {
	budget            stream.Budget
	model, stopReason string
	usage             schema.Usage
	blocks            []*contentBlock
	started, stopped  bool
}

type contentBlock struct {
	typ, id, name string
	// text holds the text, the thinking or the input JSON deltas.
	text strings.Builder
	// input is a tool_use block's input as it started.
	input string
}

func (a *messageAcc) block(typ string, i int64) (*contentBlock, error) {
	if err := stream.Index(typ+" index", i, len(a.blocks)); err != nil {
		return nil, err
	}
	return a.blocks[i], nil
}

func (a *messageAcc) add(ev sdk.MessageStreamEventUnion, onDelta func(model.Delta)) error {
	if !a.started && ev.Type != "message_start" {
		return stream.Malformed("%s before message_start", ev.Type)
	}
	switch ev.Type {
	case "message_start":
		if a.started {
			return stream.Malformed("a second message_start")
		}
		a.started = true
		m := ev.Message
		if err := stream.Name("model name", string(m.Model)); err != nil {
			return err
		}
		a.model = string(m.Model)
		a.usage = schema.Usage{PromptTokens: m.Usage.InputTokens, CompletionTokens: m.Usage.OutputTokens,
			CacheReadTokens: m.Usage.CacheReadInputTokens, CacheWriteTokens: m.Usage.CacheCreationInputTokens}
	case "content_block_start":
		// Blocks start in order without gaps: the index must be the next
		// one, and there may be only so many.
		if err := stream.Index("content block index", ev.Index, min(len(a.blocks)+1, stream.MaxContentBlocks)); err != nil {
			return err
		}
		if ev.Index != int64(len(a.blocks)) {
			return stream.Malformed("content_block_start for index %d, expected %d", ev.Index, len(a.blocks))
		}
		cb := ev.ContentBlock
		b := &contentBlock{typ: cb.Type}
		switch cb.Type {
		case "text":
			b.text.WriteString(cb.Text)
		case "thinking":
			b.text.WriteString(cb.Thinking)
		case "tool_use":
			if err := a.budget.Call(); err != nil {
				return err
			}
			if err := stream.Name("tool name", cb.Name); err != nil {
				return err
			}
			if err := stream.Name("tool-use id", cb.ID); err != nil {
				return err
			}
			b.id, b.name, b.input = cb.ID, cb.Name, cb.JSON.Input.Raw()
			onDelta(model.Delta{Kind: model.DeltaToolCall, Text: cb.Name})
		}
		if err := a.budget.Text(b.text.Len() + len(b.input)); err != nil {
			return err
		}
		a.blocks = append(a.blocks, b)
	case "content_block_delta":
		b, err := a.block("content_block_delta", ev.Index)
		if err != nil {
			return err
		}
		d := ev.Delta
		var piece string
		var kind model.DeltaKind
		switch {
		case d.Type == "text_delta" && b.typ == "text":
			piece, kind = d.Text, model.DeltaText
		case d.Type == "thinking_delta" && b.typ == "thinking":
			piece, kind = d.Thinking, model.DeltaReasoning
		case d.Type == "input_json_delta" && b.typ == "tool_use":
			piece, kind = d.PartialJSON, model.DeltaToolCall
		case d.Type == "text_delta" || d.Type == "thinking_delta" || d.Type == "input_json_delta":
			return stream.Malformed("a %s for a %s block", d.Type, b.typ)
		default:
			return nil // signatures, citations: not kept
		}
		if err := a.budget.Text(len(piece)); err != nil {
			return err
		}
		b.text.WriteString(piece)
		if kind != model.DeltaToolCall && piece != "" {
			onDelta(model.Delta{Kind: kind, Text: piece})
		}
	case "content_block_stop":
		if _, err := a.block("content_block_stop", ev.Index); err != nil {
			return err
		}
	case "message_delta":
		a.stopReason = string(ev.Delta.StopReason)
		u := ev.Usage
		a.usage.CompletionTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.usage.PromptTokens = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.usage.CacheWriteTokens = u.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

func (a *messageAcc) response() model.Response {
	resp := model.Response{Model: a.model}
	var text, thinking strings.Builder
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			thinking.WriteString(b.text.String())
		case "tool_use":
			args := b.text.String()
			if args == "" {
				args = b.input
			}
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, schema.ToolCall{ID: b.id, Type: "function", Function: schema.FunctionCall{Name: b.name, Arguments: args}})
		}
	}
	resp.Content, resp.Reasoning = text.String(), thinking.String()
	// Anthropic counts input tokens without the cached ones.
	u := a.usage
	resp.Usage = schema.Usage{PromptTokens: u.PromptTokens + u.CacheReadTokens + u.CacheWriteTokens, CompletionTokens: u.CompletionTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	switch a.stopReason {
	case "tool_use":
		resp.FinishReason = "tool_calls"
	case "max_tokens":
		resp.FinishReason = "length"
	case "refusal":
		resp.FinishReason = "content_filter"
	default:
		resp.FinishReason = "stop"
	}
	return resp
}

func (p *Provider) wrap(ctx context.Context, wd *model.Watchdog, w *stream.Watch, err error) error {
	if e := stream.Interrupted(ctx, p.name, wd); e != nil {
		return e
	}
	var apierr *sdk.Error
	if errors.As(err, &apierr) {
		pe := &model.ProviderError{Provider: p.name, Status: apierr.StatusCode, Message: apierr.RawJSON(), Err: err}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(apierr.RawJSON()), &body) == nil && body.Error.Message != "" {
			pe.Message = body.Error.Message
		}
		if apierr.Response != nil {
			pe.RetryAfter = model.ParseRetryAfter(apierr.Response.Header.Get("Retry-After"), time.Now())
		}
		return pe
	}
	return stream.Wrap(p.name, w, err)
}
