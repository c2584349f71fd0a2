package openai

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

// sdkBody is what the SDK sends for req: its params marshalled, with the
// stream flag NewStreaming adds.
func sdkBody(t testing.TB, req model.Request, imgs map[string][]byte) any {
	t.Helper()
	raw, err := json.Marshal(sdkParams(req, imgs))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	v["stream"] = true
	return v
}

func ourBody(t testing.TB, req model.Request, imgs map[string][]byte) any {
	t.Helper()
	raw, err := chatBody(req, imgs)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) {
		t.Fatalf("chatBody made invalid JSON: %s", raw)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChatBodyMatchesSDK(t *testing.T) {
	img := schema.ImageRef{SHA256: strings.Repeat("ab", 32), MediaType: "image/png", Size: 3, Name: "a.png"}
	gone := schema.ImageRef{SHA256: strings.Repeat("cd", 32), MediaType: "image/jpeg", Size: 9}
	imgs := map[string][]byte{img.SHA256: {0x89, 'P', 'N'}}
	params := map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string", "description": "a <b> & \"c\""}}, "required": []any{"command"}}
	cases := map[string]model.Request{
		"empty": {Model: "m"},
		"system and user": {Model: "gpt-x", System: "be brief\n\t\"ok\"", Messages: []schema.Message{
			{Role: "user", Content: "hi <there> & \u2028 \x01 \xff é 😀"}}},
		"tool round": {Model: "m", MaxTokens: 77, Tools: []model.ToolSpec{{Name: "terminal", Description: "run", Parameters: params}, {Name: "nop", Description: ""}},
			Messages: []schema.Message{
				{Role: "user", Content: "go"},
				{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "c1", Type: "function", Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"echo \"x\""}`}}}},
				{Role: "tool", Content: "x\n", ToolCallID: "c1", Name: "terminal"},
				{Role: "assistant", Content: "Let me check.", ToolCalls: []schema.ToolCall{{ID: "c2", Function: schema.FunctionCall{Name: "nop", Arguments: "{}"}}, {ID: "c3", Function: schema.FunctionCall{Name: "nop", Arguments: ""}}}},
				{Role: "tool", Content: "", ToolCallID: "c2"},
				{Role: "tool", Content: "done", ToolCallID: "c3"},
				{Role: "assistant", Content: ""},
				{Role: "system", Content: "[note]"},
				{Role: "mystery", Content: "dropped by both"},
			}},
		"no tools on the grace call": {Model: "m", NoTools: true, Tools: []model.ToolSpec{{Name: "terminal", Parameters: params}}, Messages: []schema.Message{{Role: "user", Content: "x"}}},
		"images": {Model: "m", Messages: []schema.Message{
			{Role: "user", Content: "what is this?", Images: []schema.ImageRef{img, gone}},
			{Role: "user", Images: []schema.ImageRef{img}},
		}},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := sdkBody(t, req, imgs), ourBody(t, req, imgs)
			if !reflect.DeepEqual(want, got) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				t.Fatalf("chatBody differs from the SDK's request\n sdk: %s\nours: %s", w, g)
			}
		})
	}
}

// TestChatBodyMatchesSDKRandom holds chatBody to the SDK on histories made
// at random: any role, any bytes (invalid UTF-8, control characters, HTML
// characters, line separators), tool calls and images.
func TestChatBodyMatchesSDKRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(30))
	alphabet := []string{"a", "Z", " ", "\n", "\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028", "\u2029", "\xff", "\xc3", "{", "}", "\t"}
	str := func() string {
		var sb strings.Builder
		for n := rng.Intn(12); n > 0; n-- {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return sb.String()
	}
	img := schema.ImageRef{SHA256: strings.Repeat("ef", 32), MediaType: "image/webp", Size: 4}
	imgs := map[string][]byte{img.SHA256: []byte(str())}
	roles := []string{"user", "assistant", "tool", "system", "other"}
	for i := 0; i < 500; i++ {
		req := model.Request{Model: str(), System: str(), MaxTokens: rng.Intn(3) * 100, NoTools: rng.Intn(4) == 0}
		for n := rng.Intn(4); n > 0; n-- {
			req.Tools = append(req.Tools, model.ToolSpec{Name: str(), Description: str(), Parameters: map[string]any{"type": "object", str(): str()}})
		}
		for n := rng.Intn(10); n > 0; n-- {
			m := schema.Message{Role: roles[rng.Intn(len(roles))], Content: str(), ToolCallID: str()}
			if m.Role == "assistant" {
				for c := rng.Intn(3); c > 0; c-- {
					// A call always has a name (the SDK leaves out a
					// function with neither name nor arguments, though
					// the API requires it; ours always sends it).
					m.ToolCalls = append(m.ToolCalls, schema.ToolCall{ID: str(), Function: schema.FunctionCall{Name: "n" + str(), Arguments: str()}})
				}
			}
			if m.Role == "user" && rng.Intn(3) == 0 {
				m.Images = []schema.ImageRef{img}
			}
			req.Messages = append(req.Messages, m)
		}
		want, got := sdkBody(t, req, imgs), ourBody(t, req, imgs)
		if !reflect.DeepEqual(want, got) {
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			t.Fatalf("case %d: chatBody differs from the SDK's request\n sdk: %s\nours: %s", i, w, g)
		}
	}
}

// benchHistory is a turn K tool calls deep, as the agent sends it on its
// last step.
func benchHistory(k int) model.Request {
	req := model.Request{Model: "gpt-test", System: strings.Repeat("You are Hermes. ", 200), Messages: []schema.Message{{Role: "user", Content: "go"}}}
	for i := 0; i < 20; i++ {
		req.Tools = append(req.Tools, model.ToolSpec{Name: "tool" + string(rune('a'+i)), Description: strings.Repeat("does things ", 10),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}})
	}
	for i := 0; i < k; i++ {
		req.Messages = append(req.Messages,
			schema.Message{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "call_" + string(rune('a'+i%26)), Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"echo step"}`}}}},
			schema.Message{Role: "tool", ToolCallID: "call_x", Content: "step\n"})
	}
	return req
}

// BenchmarkChatBody is the request body of a 60-call turn's last step
// encoded by chatBody, beside BenchmarkChatBodySDK: the same body through
// the SDK's params, as Complete encoded it before.
func BenchmarkChatBody(b *testing.B) {
	req := benchHistory(60)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatBody(req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatBodySDK is the baseline of BenchmarkChatBody.
func BenchmarkChatBodySDK(b *testing.B) {
	req := benchHistory(60)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(sdkParams(req, nil)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSchemaCache: a cached schema encodes as the uncached one, and two
// tools with equal-looking but different maps keep their own schemas.
func TestSchemaCache(t *testing.T) {
	var c schemaCache
	req := benchHistory(3)
	req.Tools[1].Parameters = map[string]any{"type": "object", "properties": map[string]any{"other": map[string]any{"type": "integer"}}}
	want, err := chatBody(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := encodeChat(req, nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("pass %d: cached body differs\nwant %s\n got %s", i, want, got)
		}
	}
	if len(c.m) != 20 {
		t.Fatalf("cache holds %d schemas, want 20 (one per map)", len(c.m))
	}
	if _, err := encodeChat(model.Request{Tools: []model.ToolSpec{{Name: "bad", Parameters: map[string]any{"f": func() {}}}}}, nil, &c); err == nil {
		t.Fatal("a schema that cannot be encoded gave no error")
	}
}

// BenchmarkChatBodyCached is BenchmarkChatBody with the provider's schema
// cache, as Complete encodes.
func BenchmarkChatBodyCached(b *testing.B) {
	req := benchHistory(60)
	var c schemaCache
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeChat(req, nil, &c); err != nil {
			b.Fatal(err)
		}
	}
}
