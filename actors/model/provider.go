// Package model is the port to language models, named for its noun: the
// Provider a turn calls, the Request it sends, the Response and stream
// Deltas it gets back, the errors providers return and how they are
// classified, the Ladder of endpoints (retries, key rotation, fallbacks),
// the stall watchdog and prices. adapters/llm implements Provider once per
// API mode; actors/agent drives it.
package model

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/hermes-go/hermes/schema"
)

// API modes a provider can speak.
const (
	ModeChatCompletions = "chat_completions"
	ModeAnthropic       = "anthropic_messages"
	ModeResponses       = "codex_responses"
	// ModeGemini is Google's native Gemini API (generateContent).
	ModeGemini = "gemini_native"
	// ModeBedrock is Amazon Bedrock's Converse API.
	ModeBedrock = "bedrock_converse"
)

// ToolSpec is what the model is told about one tool.
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Request is one model call.
type Request struct {
	Model string
	// System is the stable prefix, sent first and unchanged on every call.
	System string
	// Messages follow the system message, ephemeral layers included.
	Messages  []schema.Message
	Tools     []ToolSpec
	MaxTokens int
	// NoTools withholds tools even when Tools is set (the grace call).
	NoTools bool
	// Blobs reads the bytes of the images Messages name; nil sends each
	// image as a line of text saying it was there (summaries, titles).
	Blobs Blobs
}

// Blobs reads the bytes of an image a message names (events/blobs keeps
// them beside the log).
type Blobs interface {
	ReadImage(ctx context.Context, ref schema.ImageRef) ([]byte, error)
}

// Images loads the bytes of every image r's messages name, once each, by
// SHA-256; nil when r has no Blobs. A provider encodes them as its wire
// format wants and calls ImageText for an image missing from the map.
func (r Request) Images(ctx context.Context) (map[string][]byte, error) {
	if r.Blobs == nil {
		return nil, nil
	}
	var out map[string][]byte
	for _, m := range r.Messages {
		for _, ref := range m.Images {
			if _, ok := out[ref.SHA256]; ok {
				continue
			}
			b, err := r.Blobs.ReadImage(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", ref.SHA256, err)
			}
			if out == nil {
				out = map[string][]byte{}
			}
			out[ref.SHA256] = b
		}
	}
	return out, nil
}

// ImageText is what stands for an image a call does not send as one.
func ImageText(ref schema.ImageRef) string {
	name := ref.Name
	if name == "" {
		name = ref.SHA256[:min(12, len(ref.SHA256))]
	}
	return fmt.Sprintf("[image %s: %s, %d bytes, not shown to this call]", name, ref.MediaType, ref.Size)
}

// DataURL is an image as a data: URL (the OpenAI-style wire formats).
func DataURL(ref schema.ImageRef, data []byte) string {
	return "data:" + ref.MediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// Response is a complete model answer.
type Response struct {
	Content   string
	Reasoning string
	ToolCalls []schema.ToolCall
	// FinishReason is normalised to stop, tool_calls, length or
	// content_filter.
	FinishReason string
	Usage        schema.Usage
	// Calls is how many HTTP calls made this response (continuations).
	Calls int
	Model string
}

// DeltaKind tells what a streamed delta carries.
type DeltaKind uint8

const (
	// DeltaText is answer text.
	DeltaText DeltaKind = iota
	// DeltaReasoning is thinking text.
	DeltaReasoning
	// DeltaToolCall is a tool call's name as soon as it is known.
	DeltaToolCall
)

// Delta is one streamed piece of a response.
type Delta struct {
	Kind DeltaKind
	Text string
}

// Provider is the port to a model API; adapters/llm implements it once per
// API mode with the official SDKs.
type Provider interface {
	// Name is the provider's name (openai, anthropic, openrouter, ...).
	Name() string
	// APIMode is one of the Mode constants.
	APIMode() string
	// Complete makes one streaming call, handing deltas to onDelta as they
	// arrive, and returns the whole response. A cancelled ctx ends it.
	Complete(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}
