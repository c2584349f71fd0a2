// Package bedrock implements the agent's Provider port over Amazon
// Bedrock's Converse API (ConverseStream) with the official AWS SDK for Go
// v2 (service/bedrockruntime). Credentials come from the SDK's chain:
// the AWS_* variables, a profile, SSO, an instance role.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
	"github.com/hermes-go/hermes/schema"
)

// DefaultRegion is used when neither the base URL nor the AWS
// configuration names one.
const DefaultRegion = "us-east-1"

// Options configure the client.
type Options struct {
	Provider string
	// BaseURL is the runtime endpoint
	// (https://bedrock-runtime.REGION.amazonaws.com, whose region is
	// used); "" for the SDK's own.
	BaseURL string
	// StallTimeout cancels a stream silent for this long (default
	// model.DefaultStallTimeout; negative disables).
	StallTimeout time.Duration
	// CallTimeout bounds a whole call (default model.DefaultCallTimeout;
	// negative disables).
	CallTimeout time.Duration
	// FirstByteTimeout bounds the wait for the server's answer (default
	// model.DefaultFirstByteTimeout; negative disables).
	FirstByteTimeout time.Duration
}

// Provider speaks Bedrock's Converse API.
type Provider struct {
	name     string
	client   *bedrockruntime.Client
	timeouts model.Timeouts
}

// New returns a Bedrock provider; it reads the AWS configuration (region
// and credentials) but makes no call.
func New(ctx context.Context, o Options) (*Provider, error) {
	var opts []func(*config.LoadOptions) error
	if r := regionOf(o.BaseURL); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("bedrock: AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	cfg.RetryMaxAttempts = 1 // the recovery ladder retries
	client := bedrockruntime.NewFromConfig(cfg, func(bo *bedrockruntime.Options) {
		if o.BaseURL != "" {
			bo.BaseEndpoint = aws.String(strings.TrimSuffix(o.BaseURL, "/"))
		}
	})
	name := o.Provider
	if name == "" {
		name = "bedrock"
	}
	t := model.Timeouts{FirstByte: o.FirstByteTimeout, Stall: o.StallTimeout, Total: o.CallTimeout}.OrDefaults()
	return &Provider{name: name, client: client, timeouts: t}, nil
}

// regionOf reads the region of a bedrock-runtime.REGION.amazonaws.com URL.
func regionOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.ToLower(u.Hostname()), ".")
	if len(parts) >= 4 && parts[0] == "bedrock-runtime" && strings.HasSuffix(u.Hostname(), "amazonaws.com") {
		return parts[1]
	}
	return ""
}

// Name implements model.Provider.
func (p *Provider) Name() string { return p.name }

// APIMode implements model.Provider.
func (p *Provider) APIMode() string { return model.ModeBedrock }

// Input builds the ConverseStream request; exported for tests of the wire
// shape.
func Input(req model.Request) *bedrockruntime.ConverseStreamInput { return input(req, nil) }

// input is Input with the bytes of the images the messages name (by
// SHA-256), sent as image blocks.
func input(req model.Request, imgs map[string][]byte) *bedrockruntime.ConverseStreamInput {
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String(req.Model), Messages: messages(req.Messages, imgs)}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	if req.MaxTokens > 0 {
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(req.MaxTokens))}
	}
	if !req.NoTools && len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for _, s := range req.Tools {
			params := s.Parameters
			if params == nil {
				params = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String(s.Name),
				Description: aws.String(s.Description), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(params)}}})
		}
		in.ToolConfig = tc
	}
	return in
}

// messages converts history: tool results are toolResult blocks of a user
// message, and consecutive messages of one role are merged, as Converse
// requires alternating roles.
func messages(msgs []schema.Message, imgs map[string][]byte) []types.Message {
	var out []types.Message
	add := func(role types.ConversationRole, blocks ...types.ContentBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, types.Message{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case "user", "system":
			if m.Content != "" {
				add(types.ConversationRoleUser, &types.ContentBlockMemberText{Value: m.Content})
			}
			for _, ref := range m.Images {
				if b, ok := imgs[ref.SHA256]; ok {
					add(types.ConversationRoleUser, &types.ContentBlockMemberImage{Value: types.ImageBlock{
						Format: types.ImageFormat(strings.TrimPrefix(ref.MediaType, "image/")), Source: &types.ImageSourceMemberBytes{Value: b}}})
				} else {
					add(types.ConversationRoleUser, &types.ContentBlockMemberText{Value: model.ImageText(ref)})
				}
			}
		case "tool":
			add(types.ConversationRoleUser, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(m.ToolCallID),
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: m.Content}}}})
		case "assistant":
			var blocks []types.ContentBlock
			if m.Content != "" {
				blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Content})
			}
			for _, tc := range m.ToolCalls {
				args := map[string]any{}
				if tc.Function.Arguments != "" {
					json.Unmarshal([]byte(tc.Function.Arguments), &args)
				}
				blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(tc.ID),
					Name: aws.String(tc.Function.Name), Input: document.NewLazyDocument(args)}})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, &types.ContentBlockMemberText{Value: "(no content)"})
			}
			add(types.ConversationRoleAssistant, blocks...)
		}
	}
	return out
}

// toolUse is a tool call being streamed.
type toolUse struct {
	id, name string
	input    strings.Builder
}

// Complete implements model.Provider: one ConverseStream call, text and
// reasoning handed to onDelta as they arrive.
func (p *Provider) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (resp model.Response, err error) {
	defer func() {
		if e := stream.Recovered(p.name, recover()); e != nil {
			resp, err = model.Response{}, e
		}
	}()
	imgs, err := req.Images(ctx)
	if err != nil {
		return model.Response{}, err
	}
	sctx, wd := model.NewWatchdog(ctx, p.timeouts)
	defer wd.Stop()
	out, err := p.client.ConverseStream(sctx, input(req, imgs))
	if err != nil {
		return model.Response{}, p.wrap(ctx, wd, false, err)
	}
	es := out.GetStream()
	defer es.Close()
	var (
		budget         stream.Budget
		text, thinking strings.Builder
		uses           = map[int32]*toolUse{}
		order          []int32
		stop           types.StopReason
		stopped        bool
		usage          *types.TokenUsage
	)
	for ev := range es.Events() {
		wd.Touch()
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				if err := budget.Call(); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				name, id := aws.ToString(tu.Value.Name), aws.ToString(tu.Value.ToolUseId)
				if err := stream.Name("tool name", name); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				if err := stream.Name("tool-use id", id); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				i := aws.ToInt32(e.Value.ContentBlockIndex)
				if _, dup := uses[i]; dup {
					return model.Response{}, stream.Fail(p.name, stream.Malformed("a second tool use at block %d", i))
				}
				uses[i] = &toolUse{id: id, name: name}
				order = append(order, i)
				onDelta(model.Delta{Kind: model.DeltaToolCall, Text: name})
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			var piece string
			switch d := e.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				piece = d.Value
				text.WriteString(piece)
				onDelta(model.Delta{Kind: model.DeltaText, Text: piece})
			case *types.ContentBlockDeltaMemberReasoningContent:
				if t, ok := d.Value.(*types.ReasoningContentBlockDeltaMemberText); ok {
					piece = t.Value
					thinking.WriteString(piece)
					onDelta(model.Delta{Kind: model.DeltaReasoning, Text: piece})
				}
			case *types.ContentBlockDeltaMemberToolUse:
				u, ok := uses[aws.ToInt32(e.Value.ContentBlockIndex)]
				if !ok {
					return model.Response{}, stream.Fail(p.name, stream.Malformed("tool input for block %d, which is not a tool use", aws.ToInt32(e.Value.ContentBlockIndex)))
				}
				piece = aws.ToString(d.Value.Input)
				u.input.WriteString(piece)
			}
			if err := budget.Text(len(piece)); err != nil {
				return model.Response{}, stream.Fail(p.name, err)
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			stop, stopped = e.Value.StopReason, true
		case *types.ConverseStreamOutputMemberMetadata:
			usage = e.Value.Usage
		}
	}
	if err := es.Err(); err != nil {
		return model.Response{}, p.wrap(ctx, wd, true, err)
	}
	if err := stream.Interrupted(ctx, p.name, wd); err != nil {
		return model.Response{}, err
	}
	if !stopped {
		return model.Response{}, stream.Fail(p.name, stream.Cut("no messageStop"))
	}
	res := model.Response{Content: text.String(), Reasoning: thinking.String(), Model: req.Model}
	for _, i := range order {
		u := uses[i]
		args := u.input.String()
		if args == "" {
			args = "{}"
		}
		res.ToolCalls = append(res.ToolCalls, schema.ToolCall{ID: u.id, Type: "function", Function: schema.FunctionCall{Name: u.name, Arguments: args}})
	}
	if usage != nil {
		read, write := int64(aws.ToInt32(usage.CacheReadInputTokens)), int64(aws.ToInt32(usage.CacheWriteInputTokens))
		// Like Anthropic's, Bedrock's input count leaves the cached tokens out.
		res.Usage = schema.Usage{PromptTokens: int64(aws.ToInt32(usage.InputTokens)) + read + write,
			CompletionTokens: int64(aws.ToInt32(usage.OutputTokens)), CacheReadTokens: read, CacheWriteTokens: write}
	}
	switch stop {
	case types.StopReasonToolUse:
		res.FinishReason = "tool_calls"
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		res.FinishReason = "length"
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		res.FinishReason = "content_filter"
	default:
		res.FinishReason = "stop"
	}
	if len(res.ToolCalls) > 0 {
		res.FinishReason = "tool_calls"
	}
	return res, nil
}

// wrap turns an SDK error into a model.ProviderError: the service's
// status and message when it answered, a transport failure when it did
// not, a cut stream when the stream broke after it began.
func (p *Provider) wrap(ctx context.Context, wd *model.Watchdog, opened bool, err error) error {
	if e := stream.Interrupted(ctx, p.name, wd); e != nil {
		return e
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		pe := &model.ProviderError{Provider: p.name, Message: api.ErrorCode() + ": " + api.ErrorMessage(), Err: err}
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			pe.Status = re.HTTPStatusCode()
			if re.Response != nil {
				pe.RetryAfter = model.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
			}
		}
		if pe.Status == 0 {
			switch api.ErrorCode() {
			case "ThrottlingException", "ServiceQuotaExceededException":
				pe.Status = 429
			case "ModelNotReadyException", "ServiceUnavailableException":
				pe.Status = 503
			case "InternalServerException", "ModelStreamErrorException":
				pe.Status = 500
			case "ValidationException":
				pe.Status = 400
			}
		}
		return pe
	}
	if opened {
		return stream.Fail(p.name, fmt.Errorf("%w: %w", model.ErrStreamCut, err))
	}
	return &model.ProviderError{Provider: p.name, Transport: true, Message: err.Error(), Err: err}
}
