// Package model is the port to language models, named for its noun: the
// Provider a turn calls, the Request it sends, the Response and stream
// Deltas it gets back, the errors providers return and how they are
// classified, the Ladder of endpoints (retries, key rotation, fallbacks),
// the stall watchdog and prices. adapters/llm implements Provider once per
// API mode; actors/agent drives it.
package model

import (
	"context"

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
