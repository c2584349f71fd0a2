package openai

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/tidwall/gjson"
)

// TestChunkDecodingMatchesSDK: a chunk decoded here reads as the SDK
// decodes it (the stream was parsed by the SDK before), for chunks with
// fields of every kind a server sends — nulls, missing fields, fields of
// another JSON type than the API's, unknown fields, an error member — and
// an error member is found where the SDK's stream finds one.
func TestChunkDecodingMatchesSDK(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	str := func() string {
		return []string{`"a"`, `""`, `null`, `"é\n\u0041"`, `12`, `{"x":1}`, `[1]`, `true`, `"call_9"`, `"{\"command\":\"ls\"}"`}[rng.Intn(10)]
	}
	num := func() string { return []string{`0`, `3`, `null`, `"2"`, `1.5`, `70000`}[rng.Intn(6)] }
	obj := func(fields map[string]func() string) string {
		var parts []string
		for k, f := range fields {
			if rng.Intn(3) > 0 {
				parts = append(parts, fmt.Sprintf("%q:%s", k, f()))
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	list := func(f func() string) func() string {
		return func() string {
			if rng.Intn(5) == 0 {
				return "null"
			}
			var items []string
			for n := rng.Intn(3); n > 0; n-- {
				items = append(items, f())
			}
			return "[" + strings.Join(items, ",") + "]"
		}
	}
	call := func() string {
		return obj(map[string]func() string{"index": num, "id": str, "type": str,
			"function": func() string { return obj(map[string]func() string{"name": str, "arguments": str}) }})
	}
	delta := func() string {
		return obj(map[string]func() string{"role": str, "content": str, "reasoning_content": str, "reasoning": str, "refusal": str,
			"tool_calls": list(call)})
	}
	choice := func() string {
		return obj(map[string]func() string{"index": num, "delta": delta, "finish_reason": str, "logprobs": str})
	}
	usage := func() string {
		if rng.Intn(4) == 0 {
			return "null"
		}
		return obj(map[string]func() string{"prompt_tokens": num, "completion_tokens": num, "total_tokens": num,
			"prompt_tokens_details": func() string { return obj(map[string]func() string{"cached_tokens": num}) }})
	}
	fast := 0
	for i := 0; i < 3000; i++ {
		fields := map[string]func() string{"id": str, "object": str, "created": num, "model": str, "choices": list(choice), "usage": usage}
		if rng.Intn(10) == 0 {
			fields["error"] = str
		}
		data := []byte(obj(fields))
		var sdk openai.ChatCompletionChunk
		sdkErr := json.Unmarshal(data, &sdk)
		got, err := decodeChunk(data)
		var direct chunk
		if json.Unmarshal(data, &direct) == nil {
			fast++
		}
		if (err != nil) != (sdkErr != nil) {
			t.Fatalf("%s: decoded with error %v, the SDK with %v", data, err, sdkErr)
		}
		if err == nil {
			if want := fromSDK(sdk); !reflect.DeepEqual(norm(got), norm(want)) {
				t.Fatalf("%s:\n got %+v\nwant %+v", data, got, want)
			}
		}
		ep := gjson.GetBytes(data, "error")
		if e, ok := errorField(data); ok != ep.Exists() || e != ep.String() {
			t.Fatalf("%s: error member %q %v, the SDK's stream %q %v", data, e, ok, ep.String(), ep.Exists())
		}
	}
	if fast < 300 {
		t.Fatalf("only %d of 3000 chunks took the direct path: the comparison tests the fallback", fast)
	}
}

// norm makes empty lists nil: an empty list and none mean the same.
func norm(c chunk) chunk {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	return c
}
