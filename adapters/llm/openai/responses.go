package openai

import (
	"context"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/responses"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
	"github.com/hermes-go/hermes/schema"
)

// Responses speaks the Responses API (codex_responses), streaming. It sends
// the whole history each call (store=false): the event log, not the
// provider, keeps the conversation.
type Responses struct {
	name     string
	client   openai.Client
	timeouts model.Timeouts
}

// NewResponses returns a Responses-API provider.
func NewResponses(o Options) *Responses {
	name := o.Provider
	if name == "" {
		name = "openai"
	}
	return &Responses{name: name, client: o.client(), timeouts: o.timeouts()}
}

func (r *Responses) Name() string    { return r.name }
func (r *Responses) APIMode() string { return model.ModeResponses }

// responsesInput converts history to Responses input items, the images a
// user message names (bytes by SHA-256 in imgs) as input_image parts.
func responsesInput(msgs []schema.Message, imgs map[string][]byte) responses.ResponseInputParam {
	var in responses.ResponseInputParam
	for _, m := range msgs {
		switch m.Role {
		case "user", "system":
			if len(m.Images) > 0 {
				var parts responses.ResponseInputMessageContentListParam
				if m.Content != "" {
					parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: m.Content}})
				}
				for _, ref := range m.Images {
					if b, ok := imgs[ref.SHA256]; ok {
						parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
							Detail: responses.ResponseInputImageDetailAuto, ImageURL: openai.String(model.DataURL(ref, b))}})
					} else {
						parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: model.ImageText(ref)}})
					}
				}
				in = append(in, responses.ResponseInputItemParamOfMessage(parts, responses.EasyInputMessageRoleUser))
				continue
			}
			role := responses.EasyInputMessageRoleUser
			if m.Role == "system" {
				role = responses.EasyInputMessageRoleSystem
			}
			in = append(in, responses.ResponseInputItemParamOfMessage(m.Content, role))
		case "assistant":
			if m.Content != "" {
				in = append(in, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range m.ToolCalls {
				in = append(in, responses.ResponseInputItemParamOfFunctionCall(tc.Function.Arguments, tc.ID, tc.Function.Name))
			}
		case "tool":
			in = append(in, responses.ResponseInputItemParamOfFunctionCallOutput(m.ToolCallID, m.Content))
		}
	}
	return in
}

// Complete implements model.Provider. The answer is read from
// response.completed (or response.incomplete); a stream that ends without
// either is an error, whatever deltas came before.
func (r *Responses) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (resp model.Response, err error) {
	defer func() {
		if e := stream.Recovered(r.name, recover()); e != nil {
			resp, err = model.Response{}, e
		}
	}()
	imgs, err := req.Images(ctx)
	if err != nil {
		return model.Response{}, err
	}
	params := responses.ResponseNewParams{
		Model: req.Model,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responsesInput(req.Messages, imgs)},
		Store: openai.Bool(false),
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	if req.MaxTokens > 0 {
		params.MaxOutputTokens = openai.Int(int64(req.MaxTokens))
	}
	if !req.NoTools {
		for _, s := range req.Tools {
			params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
				Name: s.Name, Description: openai.String(s.Description), Parameters: s.Parameters, Strict: openai.Bool(false)}})
		}
	}
	sctx, wd := model.NewWatchdog(ctx, r.timeouts)
	defer wd.Stop()
	sctx, watch := stream.Start(sctx, wd)
	s := r.client.Responses.NewStreaming(sctx, params)
	defer s.Close()
	var final *responses.Response
	// streamed bounds the deltas handed on, which nothing accumulates
	// here: the final event carries the whole output.
	var streamed stream.Budget
	delta := func(kind model.DeltaKind, text string) error {
		if err := streamed.Text(len(text)); err != nil {
			return err
		}
		onDelta(model.Delta{Kind: kind, Text: text})
		return nil
	}
	for s.Next() {
		wd.Touch()
		ev := s.Current()
		var derr error
		switch ev.Type {
		case "response.output_text.delta":
			derr = delta(model.DeltaText, ev.Delta.OfString)
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			derr = delta(model.DeltaReasoning, ev.Delta.OfString)
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				if derr = stream.Name("tool name", ev.Item.Name); derr == nil {
					onDelta(model.Delta{Kind: model.DeltaToolCall, Text: ev.Item.Name})
				}
			}
		case "response.completed", "response.incomplete":
			resp := ev.Response
			final = &resp
		case "response.failed", "error":
			msg := ev.Message
			if msg == "" {
				msg = ev.Response.Error.Message
			}
			return model.Response{}, &model.ProviderError{Provider: r.name, Status: 500, Message: msg}
		}
		if derr != nil {
			return model.Response{}, stream.Fail(r.name, derr)
		}
	}
	if err := s.Err(); err != nil {
		return model.Response{}, wrapErr(ctx, r.name, wd, watch, err)
	}
	if err := stream.Interrupted(ctx, r.name, wd); err != nil {
		return model.Response{}, err
	}
	if final == nil {
		return model.Response{}, stream.Fail(r.name, stream.Cut("no response.completed"))
	}
	out, err := responseOf(final)
	if err != nil {
		return model.Response{}, stream.Fail(r.name, err)
	}
	return out, nil
}

// responseOf reads the answer out of a final response, within the bounds.
func responseOf(final *responses.Response) (model.Response, error) {
	if err := stream.Name("model name", string(final.Model)); err != nil {
		return model.Response{}, err
	}
	out := model.Response{Model: string(final.Model), FinishReason: "stop"}
	var budget stream.Budget
	var text, reasoning strings.Builder
	for _, item := range final.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				if c.Type == "output_text" {
					if err := budget.Text(len(c.Text)); err != nil {
						return model.Response{}, err
					}
					text.WriteString(c.Text)
				}
			}
		case "reasoning":
			for _, s := range item.Summary {
				if err := budget.Text(len(s.Text)); err != nil {
					return model.Response{}, err
				}
				reasoning.WriteString(s.Text)
			}
		case "function_call":
			if err := budget.Call(); err != nil {
				return model.Response{}, err
			}
			if err := stream.Name("tool name", item.Name); err != nil {
				return model.Response{}, err
			}
			if err := stream.Name("tool-call id", item.CallID); err != nil {
				return model.Response{}, err
			}
			if err := budget.Text(len(item.Arguments)); err != nil {
				return model.Response{}, err
			}
			out.ToolCalls = append(out.ToolCalls, schema.ToolCall{ID: item.CallID, Type: "function",
				Function: schema.FunctionCall{Name: item.Name, Arguments: item.Arguments}})
		}
	}
	out.Content, out.Reasoning = text.String(), reasoning.String()
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	if final.Status == "incomplete" {
		out.FinishReason = "length"
		if final.IncompleteDetails.Reason == "content_filter" {
			out.FinishReason = "content_filter"
		}
	}
	u := final.Usage
	out.Usage = schema.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, CacheReadTokens: u.InputTokensDetails.CachedTokens}
	return out, nil
}
