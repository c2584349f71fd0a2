package schema

// Message is one chat message in OpenAI chat-completions form, the shape the
// history is kept in internally whatever API mode a provider speaks.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string `json:"role"`
	// Content is the message text; empty for an assistant turn that only
	// calls tools.
	Content string `json:"content"`
	// Reasoning holds the model's thinking (reasoning_content, <think>
	// blocks, thinking blocks), kept apart from Content.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// Images are pictures a user message carries, by reference to the
	// home's blob store; the bytes are never inside an event.
	Images []ImageRef `json:"images,omitempty"`
}

// ImageRef names an image kept once, content-addressed, in the blob store
// beside the event log: its SHA-256 (lower-case hex), its media type as
// sniffed from the bytes (image/png, image/jpeg, image/gif, image/webp) and
// its size in bytes. Name is the file name it came with, for people only.
type ImageRef struct {
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Name      string `json:"name,omitempty"`
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function name and its JSON-encoded arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is token usage normalised across API modes.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Estimated marks counts made here because the server reported none
	// (some local servers do not in streams): about four characters a
	// token.
	Estimated bool `json:"estimated,omitempty"`
}

// Add returns the sum of two usages; the sum is an estimate when either
// part is.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		Estimated:        u.Estimated || o.Estimated,
	}
}

// Total is every token counted once.
func (u Usage) Total() int64 {
	return u.PromptTokens + u.CompletionTokens
}

// ImagesOf lists the images an event names: a user message's, or those of
// the history a session starts from.
func ImagesOf(p Payload) []ImageRef {
	switch e := p.(type) {
	case UserMessageAdded:
		return e.Images
	case SessionStarted:
		var out []ImageRef
		for _, m := range e.History {
			out = append(out, m.Images...)
		}
		return out
	}
	return nil
}
