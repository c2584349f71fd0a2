package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/ssestream"
)

// chunk is the part of a chat.completions stream chunk the agent reads,
// decoded straight from the event's JSON: the SDK's decoder (reflection
// over every field the API defines, with metadata per field) cost a
// model step more than encoding its whole request. A chunk this struct
// cannot hold (a field of an unexpected JSON type) is decoded by the SDK
// instead, so that what a lenient server sends means what it did before;
// TestChunkDecodingMatchesSDK holds the two equal.
type chunk struct {
	Model   string      `json:"model"`
	Usage   *chunkUsage `json:"usage"`
	Choices []struct {
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        []chunkToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// decodeChunk decodes one event's data.
func decodeChunk(data []byte) (chunk, error) {
	var c chunk
	err := json.Unmarshal(data, &c)
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) {
		return c, err
	}
	// A field of another type than the API's: as the SDK reads it.
	var sdk openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &sdk); err != nil {
		return chunk{}, err
	}
	return fromSDK(sdk), nil
}

// fromSDK is the chunk the SDK decoded, as chunk.
func fromSDK(ch openai.ChatCompletionChunk) chunk {
	c := chunk{Model: ch.Model}
	if ch.JSON.Usage.Valid() {
		c.Usage = &chunkUsage{PromptTokens: ch.Usage.PromptTokens, CompletionTokens: ch.Usage.CompletionTokens}
		c.Usage.PromptTokensDetails.CachedTokens = ch.Usage.PromptTokensDetails.CachedTokens
	}
	for _, choice := range ch.Choices {
		c.Choices = append(c.Choices, struct {
			Delta struct {
				Content          string          `json:"content"`
				ReasoningContent string          `json:"reasoning_content"`
				Reasoning        string          `json:"reasoning"`
				ToolCalls        []chunkToolCall `json:"tool_calls"`
			} `json:"delta"`
			FinishReason string `json:"finish_reason"`
		}{FinishReason: choice.FinishReason})
		d := &c.Choices[len(c.Choices)-1].Delta
		d.Content = choice.Delta.Content
		d.ReasoningContent = extraString(choice.Delta.JSON.ExtraFields, "reasoning_content")
		d.Reasoning = extraString(choice.Delta.JSON.ExtraFields, "reasoning")
		for _, tc := range choice.Delta.ToolCalls {
			t := chunkToolCall{Index: tc.Index, ID: tc.ID}
			t.Function.Name, t.Function.Arguments = tc.Function.Name, tc.Function.Arguments
			d.ToolCalls = append(d.ToolCalls, t)
		}
	}
	return c
}

// chunks reads a chat.completions event stream as the SDK's stream does
// (events after [DONE] are read and dropped; an event holding an error
// field ends the stream with "received error while streaming: …"), and
// calls fn with each chunk.
func chunks(res *http.Response, fn func(chunk) error) error {
	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return errors.New("no response body")
	}
	defer dec.Close()
	done := false
	for dec.Next() {
		data := dec.Event().Data
		if done {
			continue
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			done = true
			continue
		}
		if e, ok := errorField(data); ok {
			return fmt.Errorf("received error while streaming: %s", e)
		}
		c, err := decodeChunk(data)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return dec.Err()
}

// errorField reports whether data, a JSON object, has an "error" member at
// its top level, and its text: a string's content, or the raw JSON.
func errorField(data []byte) (string, bool) {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return "", false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return "", false
	}
	raw, ok := top["error"]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	if string(raw) == "null" {
		return "", true
	}
	return string(raw), true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
