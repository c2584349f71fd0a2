package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	oa "github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
)

// These tests drive the server with the official Go client, as any
// OpenAI-compatible program would.

func (r *rig) client(opts ...option.RequestOption) *oa.Client {
	c := oa.NewClient(append([]option.RequestOption{option.WithBaseURL(r.url + "/v1/"), option.WithAPIKey(r.key),
		option.WithMaxRetries(0), option.WithRequestTimeout(60 * time.Second)}, opts...)...)
	return &c
}

// weatherScript: the model calls our weather tool, then answers with its
// result.
func weatherScript() []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "call_w1", Name: "weather", Args: `{"city":"Paris"}`}}, Prompt: 120, Completion: 10},
		{Content: "It is 12°C and sunny in Paris.", Prompt: 150, Completion: 9, CacheRead: 100},
	}
}

// toolResultSent reports whether the model's second call carried the
// weather tool's result.
func toolResultSent(t *testing.T, reqs []llmtest.Request) bool {
	t.Helper()
	if len(reqs) < 2 {
		return false
	}
	return strings.Contains(string(reqs[1].Raw), "12°C and sunny in Paris") || strings.Contains(string(reqs[1].Raw), `12\u00b0C and sunny in Paris`)
}

func TestChatCompletionRunsOurToolAndReportsUsage(t *testing.T) {
	r := newRig(t, weatherScript())
	var httpResp *http.Response
	// The client offers a tool of its own: it is ignored, the agent's
	// tools run on the server.
	res, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model:    apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What's the weather in Paris?")},
		Tools: []oa.ChatCompletionToolParam{{Function: oa.FunctionDefinitionParam{Name: "client_side_tool",
			Parameters: oa.FunctionParameters{"type": "object"}}}},
	}, option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "It is 12°C and sunny in Paris." {
		t.Fatalf("content %q", got)
	}
	if res.Object != "chat.completion" || !strings.HasPrefix(res.ID, "chatcmpl-") || res.Model != apiserver.Alias || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion %+v", res)
	}
	if r.tools.calls.Load() != 1 {
		t.Fatalf("weather tool ran %d times", r.tools.calls.Load())
	}
	reqs := r.llm.Requests()
	if !toolResultSent(t, reqs) {
		t.Fatalf("the tool's result did not reach the model: %s", reqs[len(reqs)-1].Raw)
	}
	if names := toolNames(reqs[0]); !hasString(names, "weather") || hasString(names, "client_side_tool") {
		t.Fatalf("tools offered to the model: %v", names)
	}
	// Usage is the turn's: both model calls.
	if res.Usage.PromptTokens != 270 || res.Usage.CompletionTokens != 19 || res.Usage.TotalTokens != 289 || res.Usage.PromptTokensDetails.CachedTokens != 100 {
		t.Fatalf("usage %+v", res.Usage)
	}
	sid := httpResp.Header.Get(apiserver.SessionHeader)
	if sid == "" {
		t.Fatal("no session header")
	}
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 1)
	if len(rs) != 1 || !strings.Contains(string(rs[0].Payload), `"source":"api"`) {
		t.Fatalf("session %s: %+v", sid, rs)
	}
	// The reply is recorded as delivered to the API, under the id the
	// client got.
	waitFor(t, "delivery recorded", func() bool {
		all, _ := r.store.ReadAll(context.Background(), 0, 0)
		for _, e := range all {
			if e.Type == "GatewayMessageDelivered" && strings.Contains(string(e.Payload), res.ID) {
				return true
			}
		}
		return false
	})
}

func TestChatCompletionStreamsWithUsage(t *testing.T) {
	// A slow model and a short keep-alive: comment lines come between the
	// chunks, and the client must take them.
	script := weatherScript()
	script[1].Delay = 300 * time.Millisecond
	r := newRig(t, script, func(o *apiserver.Options) { o.KeepAlive = 40 * time.Millisecond })
	var httpResp *http.Response
	stream := r.client().Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{
		Model:         apiserver.Alias,
		Messages:      []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What's the weather in Paris?")},
		StreamOptions: oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)},
	}, option.WithResponseInto(&httpResp))
	acc := oa.ChatCompletionAccumulator{}
	chunks, usageChunks := 0, 0
	var text strings.Builder
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		chunks++
		if len(c.Choices) == 0 {
			usageChunks++
			if c.Usage.TotalTokens != 289 {
				t.Fatalf("usage chunk %+v", c.Usage)
			}
			continue
		}
		text.WriteString(c.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "It is 12°C and sunny in Paris." || acc.Choices[0].Message.Content != text.String() {
		t.Fatalf("streamed %q, accumulated %q", text.String(), acc.Choices[0].Message.Content)
	}
	if usageChunks != 1 || chunks < 4 {
		t.Fatalf("%d chunks, %d usage chunks", chunks, usageChunks)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("finish %q", acc.Choices[0].FinishReason)
	}
	if httpResp.Header.Get(apiserver.SessionHeader) == "" || !strings.HasPrefix(httpResp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("headers %v", httpResp.Header)
	}
	if r.tools.calls.Load() != 1 {
		t.Fatal("the tool did not run")
	}
	// The model was asked to stream: deltas came through the router.
	if s, _ := r.llm.Requests()[0].Body["stream"].(bool); !s {
		t.Fatal("the upstream call was not streamed")
	}
}

func TestChatCompletionContinuesASession(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "Nice to meet you, Ada."}, {Content: "Your name is Ada."}})
	c := r.client()
	var first *http.Response
	_, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("My name is Ada.")}}, option.WithResponseInto(&first))
	if err != nil {
		t.Fatal(err)
	}
	sid := first.Header.Get(apiserver.SessionHeader)
	var second *http.Response
	res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{
			// Earlier messages are the session's already: not sent again.
			oa.UserMessage("My name is Ada."), oa.AssistantMessage("Nice to meet you, Ada."), oa.UserMessage("What is my name?")}},
		option.WithHeader(apiserver.SessionHeader, sid), option.WithResponseInto(&second))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "Your name is Ada." || second.Header.Get(apiserver.SessionHeader) != sid {
		t.Fatalf("second answer %q in session %q (want %s)", res.Choices[0].Message.Content, second.Header.Get(apiserver.SessionHeader), sid)
	}
	reqs := r.llm.Requests()
	if got := lastUserText(t, reqs[1]); got != "What is my name?" {
		t.Fatalf("second turn's text %q", got)
	}
	// The session's own history reached the model: the first exchange.
	if !strings.Contains(string(reqs[1].Raw), "Nice to meet you, Ada.") {
		t.Fatalf("history missing: %s", reqs[1].Raw)
	}
	if n := countTypes(t, r.store, events.SessionStream(sid), "UserMessageAdded"); n != 2 {
		t.Fatalf("%d user messages in the session", n)
	}
	// An unknown session is an error, not a new session.
	_, err = c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}}, option.WithHeader(apiserver.SessionHeader, "no-such-session"))
	var apiErr *oa.Error
	if !asOpenAIError(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "session_not_found" {
		t.Fatalf("unknown session: %v", err)
	}
	// So is a deleted one.
	if err := r.store.DeleteStream(context.Background(), events.SessionStream(sid), events.Any); err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}}, option.WithHeader(apiserver.SessionHeader, sid))
	if !asOpenAIError(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, "deleted") {
		t.Fatalf("deleted session: %v", err)
	}
}

func TestNewSessionTakesEarlierMessagesAsContext(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "Your name is Ada."}})
	res, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{
			oa.SystemMessage("Answer briefly."),
			oa.UserMessage("My name is Ada."),
			oa.AssistantMessage("Hello Ada!"),
			oa.UserMessage("What is my name?")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "Your name is Ada." {
		t.Fatal(res.Choices[0].Message.Content)
	}
	got := lastUserText(t, r.llm.Requests()[0])
	for _, want := range []string{"<client_instructions>\nAnswer briefly.\n</client_instructions>", "<user>\nMy name is Ada.\n</user>",
		"<assistant>\nHello Ada!\n</assistant>", "</conversation_so_far>\n\nWhat is my name?"} {
		if !strings.Contains(got, want) {
			t.Fatalf("text for the agent lacks %q:\n%s", want, got)
		}
	}
}

func TestSlashTextIsNotAGatewayCommand(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "It is the root directory."}})
	res, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("/new is not a command here, nor is /")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "It is the root directory." {
		t.Fatalf("answer %q", res.Choices[0].Message.Content)
	}
	if got := lastUserText(t, r.llm.Requests()[0]); got != "/new is not a command here, nor is /" {
		t.Fatalf("model got %q", got)
	}
}

func TestResponsesWithPreviousResponseID(t *testing.T) {
	script := append(weatherScript(), llmtest.Reply{Content: "Yes, take sunglasses."})
	r := newRig(t, script)
	c := r.client()
	res, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: apiserver.Alias,
		Input:        responses.ResponseNewParamsInputUnion{OfString: oa.String("What's the weather in Paris?")},
		Instructions: oa.String("Be brief.")})
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputText() != "It is 12°C and sunny in Paris." || res.Status != "completed" || !strings.HasPrefix(res.ID, "resp_") {
		t.Fatalf("response %+v", res)
	}
	if res.Usage.InputTokens != 270 || res.Usage.OutputTokens != 19 || res.Usage.InputTokensDetails.CachedTokens != 100 {
		t.Fatalf("usage %+v", res.Usage)
	}
	if r.tools.calls.Load() != 1 {
		t.Fatal("the tool did not run")
	}
	if got := lastUserText(t, r.llm.Requests()[0]); !strings.Contains(got, "Be brief.") || !strings.HasSuffix(got, "What's the weather in Paris?") {
		t.Fatalf("text for the agent: %q", got)
	}
	// Streamed, continuing the first response's session.
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: apiserver.Alias,
		Input:              responses.ResponseNewParamsInputUnion{OfString: oa.String("Should I take sunglasses?")},
		PreviousResponseID: oa.String(res.ID)})
	var types []string
	var deltas strings.Builder
	var done responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq+1 {
			t.Fatalf("sequence %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta.OfString)
		case "response.completed":
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created,response.in_progress,response.output_item.added,response.content_part.added,response.output_text.delta," +
		"response.output_text.done,response.content_part.done,response.output_item.done,response.completed"
	if strings.Join(types, ",") != want {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(types, ","), want)
	}
	if deltas.String() != "Yes, take sunglasses." || done.OutputText() != "Yes, take sunglasses." || done.Status != "completed" {
		t.Fatalf("streamed %q, completed %q (%s)", deltas.String(), done.OutputText(), done.Status)
	}
	if done.PreviousResponseID != res.ID {
		t.Fatalf("previous_response_id %q", done.PreviousResponseID)
	}
	// Same session: the second turn saw the first exchange.
	reqs := r.llm.Requests()
	if !strings.Contains(string(reqs[2].Raw), "What's the weather in Paris?") {
		t.Fatalf("the continued response did not see its session's history: %s", reqs[2].Raw)
	}
	// An id that is not ours is a 404.
	_, err = c.Responses.New(context.Background(), responses.ResponseNewParams{Model: apiserver.Alias,
		Input: responses.ResponseNewParamsInputUnion{OfString: oa.String("x")}, PreviousResponseID: oa.String("resp_nope")})
	var apiErr *oa.Error
	if !asOpenAIError(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown previous response: %v", err)
	}
}

func TestResponsesInputItems(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "Blue."}})
	body := map[string]any{"model": apiserver.Alias, "input": []any{
		map[string]any{"role": "developer", "content": "One word."},
		map[string]any{"role": "user", "content": "My favourite colour is blue."},
		map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Noted."}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "What is it?"}}},
	}}
	resp, b := r.postJSON(t, "/v1/responses", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out struct {
		Output []struct {
			Content []struct{ Text string }
		}
	}
	_ = json.Unmarshal(b, &out)
	if out.Output[0].Content[0].Text != "Blue." {
		t.Fatalf("%s", b)
	}
	got := lastUserText(t, r.llm.Requests()[0])
	for _, want := range []string{"One word.", "<user>\nMy favourite colour is blue.\n</user>", "<assistant>\nNoted.\n</assistant>", "\n\nWhat is it?"} {
		if !strings.Contains(got, want) {
			t.Fatalf("lacks %q:\n%s", want, got)
		}
	}
	// A function_call_output item is refused: tools are the agent's.
	resp, b = r.postJSON(t, "/v1/responses", map[string]any{"model": apiserver.Alias, "input": []any{
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "x"}}}, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "function_call_output") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func asOpenAIError(err error, target **oa.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*oa.Error)
	if ok {
		*target = e
	}
	return ok
}
