// Package openai implements the agent's Provider port over the official
// openai-go SDK: the chat-completions API (streaming), which most
// OpenAI-compatible servers speak, and the Responses API (codex_responses).
package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/respjson"
	"github.com/openai/openai-go/shared"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
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
	// (default model.DefaultStallTimeout; negative disables).
	StallTimeout time.Duration
	// CallTimeout bounds a whole call, however lively its stream
	// (default model.DefaultCallTimeout; negative disables).
	CallTimeout time.Duration
	// FirstByteTimeout bounds the wait for the server's answer (default
	// model.DefaultFirstByteTimeout; negative disables).
	FirstByteTimeout time.Duration
	// HTTPClient, when set, carries the requests (a plugin's provider
	// answers them itself).
	HTTPClient *http.Client
}

func (o Options) timeouts() model.Timeouts {
	return model.Timeouts{FirstByte: o.FirstByteTimeout, Stall: o.StallTimeout, Total: o.CallTimeout}.OrDefaults()
}

func (o Options) client() openai.Client {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		return stream.Guard(req, next)
	})}
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
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	cl := openai.NewClient(opts...)
	// The SDK appends each call's options (Chat's request body) to
	// these: with spare capacity (the SDK's defaults from OPENAI_* in the
	// environment leave some) concurrent calls wrote into the same slots
	// and one call could send another's body, its session then recording
	// the answer to another conversation. Clipped, every append copies.
	cl.Options = slices.Clip(cl.Options)
	return cl
}

// Chat speaks chat.completions with streaming.
type Chat struct {
	name     string
	client   openai.Client
	timeouts model.Timeouts
	schemas  schemaCache
}

// NewChat returns a chat-completions provider.
func NewChat(o Options) *Chat {
	name := o.Provider
	if name == "" {
		name = "openai"
	}
	return &Chat{name: name, client: o.client(), timeouts: o.timeouts()}
}

func (c *Chat) Name() string    { return c.name }
func (c *Chat) APIMode() string { return model.ModeChatCompletions }

// Messages converts history to the SDK's message params.
func Messages(system string, msgs []schema.Message) []openai.ChatCompletionMessageParamUnion {
	return messages(system, msgs, nil)
}

// messages converts history, with the bytes of the images user messages
// name (by SHA-256) sent as image_url parts holding data: URLs.
func messages(system string, msgs []schema.Message, imgs map[string][]byte) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for _, m := range msgs {
		switch m.Role {
		case "user":
			if len(m.Images) == 0 {
				out = append(out, openai.UserMessage(m.Content))
				continue
			}
			var parts []openai.ChatCompletionContentPartUnionParam
			if m.Content != "" {
				parts = append(parts, openai.TextContentPart(m.Content))
			}
			for _, ref := range m.Images {
				if b, ok := imgs[ref.SHA256]; ok {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: model.DataURL(ref, b)}))
				} else {
					parts = append(parts, openai.TextContentPart(model.ImageText(ref)))
				}
			}
			out = append(out, openai.UserMessage(parts))
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

// sdkParams is the request chatBody encodes, as the SDK's params: the
// reference TestChatBodyMatchesSDK holds chatBody to.
func sdkParams(req model.Request, imgs map[string][]byte) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{
		Model:         req.Model,
		Messages:      messages(req.System, req.Messages, imgs),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if !req.NoTools && len(req.Tools) > 0 {
		params.Tools = tools(req.Tools)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	return params
}

func tools(specs []model.ToolSpec) []openai.ChatCompletionToolParam {
	var out []openai.ChatCompletionToolParam
	for _, s := range specs {
		out = append(out, openai.ChatCompletionToolParam{Function: shared.FunctionDefinitionParam{
			Name: s.Name, Description: openai.String(s.Description), Parameters: shared.FunctionParameters(s.Parameters)}})
	}
	return out
}

// Complete implements model.Provider. Everything taken from the stream is
// bounded (package stream), and a stream that ends without finish_reason
// or [DONE] is an error, not an answer.
func (c *Chat) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (resp model.Response, err error) {
	defer func() {
		if e := stream.Recovered(c.name, recover()); e != nil {
			resp, err = model.Response{}, e
		}
	}()
	imgs, err := req.Images(ctx)
	if err != nil {
		return model.Response{}, err
	}
	body, err := encodeChat(req, imgs, &c.schemas)
	if err != nil {
		return model.Response{}, err
	}
	sctx, wd := model.NewWatchdog(ctx, c.timeouts)
	defer wd.Stop()
	sctx, watch := stream.Start(sctx, wd)
	// The body is encoded here (chatBody) and the chunks decoded here
	// (chunks); the SDK sends the request and frames the events.
	var res *http.Response
	var acc chatAcc
	var bad error // a chunk the accumulator refused
	err = c.client.Post(sctx, "chat/completions", nil, &res, option.WithRequestBody("application/json", body))
	if err == nil {
		err = chunks(res, func(ch chunk) error {
			wd.Touch()
			bad = acc.add(ch, onDelta)
			return bad
		})
	}
	if bad != nil {
		return model.Response{}, stream.Fail(c.name, bad)
	}
	if err != nil {
		return model.Response{}, wrapErr(ctx, c.name, wd, watch, err)
	}
	if err := stream.Interrupted(ctx, c.name, wd); err != nil {
		return model.Response{}, err
	}
	if acc.finish == "" && !watch.Done() {
		return model.Response{}, stream.Fail(c.name, stream.Cut("no finish_reason and no [DONE]"))
	}
	return acc.response(), nil
}

// chatAcc accumulates chat.completions chunks within the bounds.
type chatAcc struct {
	budget             stream.Budget
	model, finish      string
	usage              schema.Usage
	content, reasoning strings.Builder
	calls              []*partialCall
}

type partialCall struct {
	id         string
	name, args strings.Builder
}

func (a *chatAcc) add(ch chunk, onDelta func(model.Delta)) error {
	if ch.Model != "" {
		if err := stream.Name("model name", ch.Model); err != nil {
			return err
		}
		a.model = ch.Model
	}
	if u := ch.Usage; u != nil {
		a.usage = schema.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CacheReadTokens: u.PromptTokensDetails.CachedTokens}
	}
	for _, choice := range ch.Choices {
		d := choice.Delta
		if d.Content != "" {
			if err := a.budget.Text(len(d.Content)); err != nil {
				return err
			}
			a.content.WriteString(d.Content)
			onDelta(model.Delta{Kind: model.DeltaText, Text: d.Content})
		}
		if r := firstNonEmpty(d.ReasoningContent, d.Reasoning); r != "" {
			if err := a.budget.Text(len(r)); err != nil {
				return err
			}
			a.reasoning.WriteString(r)
			onDelta(model.Delta{Kind: model.DeltaReasoning, Text: r})
		}
		for _, tc := range d.ToolCalls {
			// The index addresses the call a fragment belongs to: it
			// sizes nothing, and must name one of the first
			// MaxToolCalls calls.
			if err := stream.Index("tool-call index", tc.Index, stream.MaxToolCalls); err != nil {
				return err
			}
			for int(tc.Index) >= len(a.calls) {
				a.calls = append(a.calls, &partialCall{})
			}
			p := a.calls[tc.Index]
			if tc.ID != "" {
				if err := stream.Name("tool-call id", tc.ID); err != nil {
					return err
				}
				p.id = tc.ID
			}
			if tc.Function.Name != "" {
				if p.name.Len()+len(tc.Function.Name) > stream.MaxNameBytes {
					return stream.Malformed("a tool name over %d bytes", stream.MaxNameBytes)
				}
				p.name.WriteString(tc.Function.Name)
				onDelta(model.Delta{Kind: model.DeltaToolCall, Text: p.name.String()})
			}
			if err := a.budget.Text(len(tc.Function.Arguments)); err != nil {
				return err
			}
			p.args.WriteString(tc.Function.Arguments)
		}
		if choice.FinishReason != "" {
			a.finish = normaliseFinish(choice.FinishReason)
		}
	}
	return nil
}

func (a *chatAcc) response() model.Response {
	resp := model.Response{Model: a.model, Usage: a.usage, FinishReason: a.finish, Content: a.content.String(), Reasoning: a.reasoning.String()}
	for _, p := range a.calls {
		if p.name.Len() == 0 && p.args.Len() == 0 {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, schema.ToolCall{ID: p.id, Type: "function",
			Function: schema.FunctionCall{Name: p.name.String(), Arguments: p.args.String()}})
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	return resp
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
