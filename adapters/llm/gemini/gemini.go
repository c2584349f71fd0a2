// Package gemini implements the agent's Provider port over Google's
// official Go SDK (google.golang.org/genai) and the native Gemini API
// (models/{model}:streamGenerateContent), which Google AI Studio keys
// speak; the OpenAI-compatible /openai path is the openai adapter's.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
	"github.com/hermes-go/hermes/schema"
)

// DefaultBaseURL is Google AI Studio's endpoint, version included.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// skipSignature is the value Google documents for a function call replayed
// without the thought signature it came with (a conversation from another
// process or provider): the check is skipped rather than the call refused.
const skipSignature = "skip_thought_signature_validator"

// maxSignatures bounds the thought signatures remembered per provider.
const maxSignatures = 4096

// Options configure the client.
type Options struct {
	Provider string
	// BaseURL is the endpoint with its API version
	// (https://generativelanguage.googleapis.com/v1beta; "" for that).
	BaseURL string
	APIKey  string
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

// Provider speaks the native Gemini API.
type Provider struct {
	name     string
	client   *genai.Client
	timeouts model.Timeouts

	mu sync.Mutex
	// sigs are the thought signatures of function calls this provider
	// received, by call ID: Gemini wants them back when the call is
	// replayed, and our history does not carry them.
	sigs map[string][]byte
	seq  int
}

// New returns a Gemini provider.
func New(o Options) (*Provider, error) {
	base, version, err := splitVersion(o.BaseURL)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: guard{http.DefaultTransport}}
	cc := &genai.ClientConfig{APIKey: o.APIKey, Backend: genai.BackendGeminiAPI, HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: version}}
	if o.APIKey == "" {
		// The SDK refuses to start without a key; the server says whether
		// it needs one.
		cc.APIKey = "none"
	}
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, fmt.Errorf("gemini client: %w", err)
	}
	name := o.Provider
	if name == "" {
		name = "gemini"
	}
	t := model.Timeouts{FirstByte: o.FirstByteTimeout, Stall: o.StallTimeout, Total: o.CallTimeout}.OrDefaults()
	return &Provider{name: name, client: client, timeouts: t, sigs: map[string][]byte{}}, nil
}

// splitVersion splits ".../v1beta" into the host part and the version the
// SDK wants apart.
func splitVersion(base string) (string, string, error) {
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("gemini base_url %q: not a URL", base)
	}
	path := strings.TrimSuffix(u.Path, "/")
	version := "v1beta"
	if i := strings.LastIndexByte(path, '/'); i >= 0 && strings.HasPrefix(path[i+1:], "v1") {
		version, path = path[i+1:], path[:i]
	}
	u.Path = path + "/"
	return u.String(), version, nil
}

// Name implements model.Provider.
func (p *Provider) Name() string { return p.name }

// APIMode implements model.Provider.
func (p *Provider) APIMode() string { return model.ModeGemini }

// Contents converts history to Gemini's contents: assistant turns are
// the model's, tool results are function responses in a user turn, and
// consecutive turns of one role are merged as the API requires.
func (p *Provider) Contents(msgs []schema.Message) []*genai.Content { return p.contents(msgs, nil) }

// contents is Contents with the bytes of the images user messages name
// (by SHA-256), sent as inline data parts.
func (p *Provider) contents(msgs []schema.Message, imgs map[string][]byte) []*genai.Content {
	var out []*genai.Content
	names := map[string]string{}
	add := func(role string, parts ...*genai.Part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, &genai.Content{Role: role, Parts: parts})
	}
	for _, m := range msgs {
		switch m.Role {
		case "user", "system":
			if m.Content != "" {
				add(genai.RoleUser, genai.NewPartFromText(m.Content))
			}
			for _, ref := range m.Images {
				if b, ok := imgs[ref.SHA256]; ok {
					add(genai.RoleUser, genai.NewPartFromBytes(b, ref.MediaType))
				} else {
					add(genai.RoleUser, genai.NewPartFromText(model.ImageText(ref)))
				}
			}
		case "tool":
			name := names[m.ToolCallID]
			if name == "" {
				name = "tool"
			}
			add(genai.RoleUser, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: m.ToolCallID, Name: name,
				Response: map[string]any{"output": m.Content}}})
		case "assistant":
			var parts []*genai.Part
			if m.Content != "" {
				parts = append(parts, genai.NewPartFromText(m.Content))
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Function.Name
				args := map[string]any{}
				if tc.Function.Arguments != "" {
					json.Unmarshal([]byte(tc.Function.Arguments), &args)
				}
				parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args},
					ThoughtSignature: p.signature(tc.ID)})
			}
			if len(parts) == 0 {
				parts = append(parts, genai.NewPartFromText("(no content)"))
			}
			add(genai.RoleModel, parts...)
		}
	}
	return out
}

func (p *Provider) signature(id string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.sigs[id]; ok {
		return s
	}
	return []byte(skipSignature)
}

func (p *Provider) remember(id string, sig []byte) {
	if len(sig) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sigs) >= maxSignatures {
		clear(p.sigs)
	}
	p.sigs[id] = sig
}

func (p *Provider) callID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return fmt.Sprintf("call_%d_%d", time.Now().UnixNano(), p.seq)
}

// Config builds the request's configuration; exported for tests of the
// wire shape.
func Config(req model.Request) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{genai.NewPartFromText(req.System)}}
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxTokens)
	}
	if !req.NoTools && len(req.Tools) > 0 {
		t := &genai.Tool{}
		for _, s := range req.Tools {
			var params any = s.Parameters
			if s.Parameters == nil {
				params = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, &genai.FunctionDeclaration{Name: s.Name, Description: s.Description, ParametersJsonSchema: params})
		}
		cfg.Tools = []*genai.Tool{t}
	}
	return cfg
}

// Complete implements model.Provider: one streamGenerateContent call,
// text and thoughts handed to onDelta as they arrive.
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
	sctx, watch := stream.Start(sctx, wd)
	sctx, st := withStatus(sctx)
	var (
		budget         stream.Budget
		text, thinking strings.Builder
		calls          []schema.ToolCall
		finish         genai.FinishReason
		usage          *genai.GenerateContentResponseUsageMetadata
		modelName      string
	)
	for chunk, err := range p.client.Models.GenerateContentStream(sctx, req.Model, p.contents(req.Messages, imgs), Config(req)) {
		wd.Touch()
		if err != nil {
			return model.Response{}, p.wrap(ctx, wd, watch, st, err)
		}
		if chunk.ModelVersion != "" {
			if err := stream.Name("model name", chunk.ModelVersion); err != nil {
				return model.Response{}, stream.Fail(p.name, err)
			}
			modelName = chunk.ModelVersion
		}
		if chunk.UsageMetadata != nil {
			usage = chunk.UsageMetadata
		}
		if fb := chunk.PromptFeedback; fb != nil && fb.BlockReason != "" {
			return model.Response{}, &model.ProviderError{Provider: p.name, Status: http.StatusBadRequest,
				Message: fmt.Sprintf("the prompt was blocked: %s %s", fb.BlockReason, fb.BlockReasonMessage)}
		}
		if len(chunk.Candidates) == 0 {
			continue
		}
		c := chunk.Candidates[0]
		if c.FinishReason != "" && c.FinishReason != genai.FinishReasonUnspecified {
			finish = c.FinishReason
		}
		if c.Content == nil {
			continue
		}
		for _, part := range c.Content.Parts {
			switch {
			case part.FunctionCall != nil:
				fc := part.FunctionCall
				if err := budget.Call(); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				if err := stream.Name("tool name", fc.Name); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				id := fc.ID
				if id == "" {
					id = p.callID()
				} else if err := stream.Name("function-call id", id); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				args, _ := json.Marshal(fc.Args)
				if fc.Args == nil {
					args = []byte("{}")
				}
				if err := budget.Text(len(args)); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				p.remember(id, part.ThoughtSignature)
				calls = append(calls, schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: fc.Name, Arguments: string(args)}})
				onDelta(model.Delta{Kind: model.DeltaToolCall, Text: fc.Name})
			case part.Text != "":
				if err := budget.Text(len(part.Text)); err != nil {
					return model.Response{}, stream.Fail(p.name, err)
				}
				kind := model.DeltaText
				if part.Thought {
					kind = model.DeltaReasoning
					thinking.WriteString(part.Text)
				} else {
					text.WriteString(part.Text)
				}
				onDelta(model.Delta{Kind: kind, Text: part.Text})
			}
		}
	}
	if err := stream.Interrupted(ctx, p.name, wd); err != nil {
		return model.Response{}, err
	}
	if finish == "" {
		return model.Response{}, stream.Fail(p.name, stream.Cut("no finishReason"))
	}
	out := model.Response{Content: text.String(), Reasoning: thinking.String(), ToolCalls: calls, Model: modelName}
	if usage != nil {
		out.Usage = schema.Usage{PromptTokens: int64(usage.PromptTokenCount),
			CompletionTokens: int64(usage.CandidatesTokenCount) + int64(usage.ThoughtsTokenCount),
			CacheReadTokens:  int64(usage.CachedContentTokenCount)}
	}
	switch {
	case len(calls) > 0:
		out.FinishReason = "tool_calls"
	case finish == genai.FinishReasonMaxTokens:
		out.FinishReason = "length"
	case finish == genai.FinishReasonStop:
		out.FinishReason = "stop"
	case finish == genai.FinishReasonMalformedFunctionCall:
		return model.Response{}, stream.Fail(p.name, stream.Malformed("the model wrote a malformed function call"))
	default:
		// SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, ...
		out.FinishReason = "content_filter"
	}
	return out, nil
}

// status is what the transport saw of a failed response: the SDK keeps
// the error body but not the HTTP status or Retry-After.
type status struct {
	mu         sync.Mutex
	code       int
	retryAfter string
}

type statusKey struct{}

func withStatus(ctx context.Context) (context.Context, *status) {
	s := &status{}
	return context.WithValue(ctx, statusKey{}, s), s
}

// guard is the HTTP transport: stream.Guard's checks of event streams and
// error bodies, and the status of a failure noted for wrap.
type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := stream.Guard(req, g.next.RoundTrip)
	if err == nil && resp != nil && resp.StatusCode >= 300 {
		if s, ok := req.Context().Value(statusKey{}).(*status); ok {
			s.mu.Lock()
			s.code, s.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			s.mu.Unlock()
		}
	}
	return resp, err
}

func (p *Provider) wrap(ctx context.Context, wd *model.Watchdog, w *stream.Watch, st *status, err error) error {
	if e := stream.Interrupted(ctx, p.name, wd); e != nil {
		return e
	}
	var apierr genai.APIError
	if errors.As(err, &apierr) {
		st.mu.Lock()
		code, ra := st.code, st.retryAfter
		st.mu.Unlock()
		if code == 0 {
			code = apierr.Code
		}
		pe := &model.ProviderError{Provider: p.name, Status: code, Message: apierr.Message, Err: err}
		if pe.Message == "" {
			pe.Message = apierr.Status
		}
		pe.RetryAfter = model.ParseRetryAfter(ra, time.Now())
		return pe
	}
	return stream.Wrap(p.name, w, err)
}
