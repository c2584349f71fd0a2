package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	oa "github.com/openai/openai-go"
	"github.com/openai/openai-go/responses"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// narrationScript: the model says something, calls the weather tool, then
// answers.
func narrationScript() []llmtest.Reply {
	return []llmtest.Reply{
		{Content: "Let me check.", ToolCalls: []llmtest.ToolCall{{ID: "call_n1", Name: "weather", Args: `{"city":"Paris"}`}}},
		{Content: "Final answer B."},
	}
}

// TestStreamedAndNotStreamedCarryTheSameText: a turn that says something
// before calling a tool answers with the same text streamed or not, the
// two model calls' texts set apart by a blank line.
func TestStreamedAndNotStreamedCarryTheSameText(t *testing.T) {
	const want = "Let me check.\n\nFinal answer B."
	r := newRig(t, append(narrationScript(), narrationScript()...))
	res, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("weather?")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != want {
		t.Fatalf("non-streamed answer %q, want %q", got, want)
	}
	stream := r.client().Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("weather again?")}})
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != want {
		t.Fatalf("streamed answer %q, want %q", text.String(), want)
	}
}

// TestClientModelIsNotPassedOn: a model name the client sends runs the
// configured model unless it is on the allow-list (model_routes); the
// allow-list's names are listed by /v1/models.
func TestClientModelIsNotPassedOn(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "a"}, {Content: "b"}, {Content: "c"}}, func(o *apiserver.Options) {
		o.ModelRoutes = map[string]string{"fast": "gpt-4.1-nano"}
	})
	c := r.client()
	models, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "hermes-agent,gpt-4o-mini,fast" {
		t.Fatalf("models %v", ids)
	}
	for _, name := range []string{"gpt-4o", "fast", apiserver.Alias} {
		res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: name,
			Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("x " + name)}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Model != name {
			t.Fatalf("the answer names %q, the client asked for %q", res.Model, name)
		}
	}
	reqs := r.llm.Requests()
	got := []any{reqs[0].Body["model"], reqs[1].Body["model"], reqs[2].Body["model"]}
	if fmt.Sprint(got) != "[gpt-4o-mini gpt-4.1-nano gpt-4o-mini]" {
		t.Fatalf("models sent upstream for gpt-4o, fast, %s: %v", apiserver.Alias, got)
	}
}

// openWebUIHistory is a request as chat front ends such as Open WebUI send
// it: no session header, the whole conversation resent, here about size
// bytes of it.
func openWebUIHistory(size int) map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "You are a helpful assistant."}}
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	for i := 0; size > 0; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d: %s", i, para)},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("answer %d: %s", i, para)})
		size -= 2 * len(para)
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "And the last question?"})
	return map[string]any{"model": "llama3:latest", "stream": false, "messages": msgs}
}

// TestLongResentHistory: a 900 KB conversation resent whole reaches the
// model; one over the text limit is refused saying so, and a body over
// the byte limit gets 413; neither reaches the model.
func TestLongResentHistory(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "the last answer"}})
	resp, body := r.postJSON(t, "/v1/chat/completions", openWebUIHistory(900_000), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "the last answer") {
		t.Fatalf("900 KB history: %d %s", resp.StatusCode, body[:min(len(body), 300)])
	}
	reqs := r.llm.Requests()
	if len(reqs) != 1 || len(reqs[0].Raw) < 900_000 || !strings.Contains(string(reqs[0].Raw), "question 0:") || !strings.Contains(string(reqs[0].Raw), "And the last question?") {
		t.Fatalf("the model did not get the whole conversation (%d requests)", len(reqs))
	}
	resp, body = r.postJSON(t, "/v1/chat/completions", openWebUIHistory(1_100_000), nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "message_too_long") || !strings.Contains(string(body), apiserver.SessionHeader) {
		t.Fatalf("1.1 MB history: %d %s", resp.StatusCode, body[:min(len(body), 300)])
	}
	resp, body = r.postJSON(t, "/v1/chat/completions", openWebUIHistory(11_000_000), nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "10000000 bytes") {
		t.Fatalf("11 MB body: %d %s", resp.StatusCode, body[:min(len(body), 300)])
	}
	if n := len(r.llm.Requests()); n != 1 {
		t.Fatalf("refused requests reached the model: %d calls", n)
	}
}

// TestPythonOpenAIClient drives the server with the official Python
// `openai` package (the one the Python Hermes Agent's venv holds,
// HERMES_AGENT_VENV): a plain completion, a stream, a long resent history
// and a routed model, as testdata/client.py does them.
func TestPythonOpenAIClient(t *testing.T) {
	venv := os.Getenv("HERMES_AGENT_VENV")
	if venv == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("HERMES_AGENT_VENV is not set (.ci/run sets it): the official Python openai package is needed")
		}
		t.Skip("HERMES_AGENT_VENV is not set: .ci/run installs the Python agent's venv, which holds the openai package")
	}
	python := filepath.Join(venv, "bin", "python")
	script := append(narrationScript(), narrationScript()...)
	script = append(script, llmtest.Reply{Content: "the last answer"}, llmtest.Reply{Content: "routed"})
	r := newRig(t, script, func(o *apiserver.Options) { o.ModelRoutes = map[string]string{"fast": "gpt-4.1-nano"} })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/client.py")
	cmd.Env = append(os.Environ(), "HERMES_API_BASE="+r.url+"/v1", "HERMES_API_KEY="+r.key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Completion, Stream, Long, Routed string
		Session                          string
		Models                           []string
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("python client output %q: %v", stdout.String(), err)
	}
	const want = "Let me check.\n\nFinal answer B."
	if got.Completion != want || got.Stream != want || got.Long != "the last answer" || got.Routed != "routed" || got.Session == "" {
		t.Fatalf("python client saw %+v", got)
	}
	reqs := r.llm.Requests()
	if len(reqs) != 6 || reqs[4].Body["model"] != "gpt-4o-mini" || reqs[5].Body["model"] != "gpt-4.1-nano" || len(reqs[4].Raw) < 900_000 {
		t.Fatalf("%d model calls; the long one %d bytes, models %v %v", len(reqs), len(reqs[4].Raw), reqs[4].Body["model"], reqs[5].Body["model"])
	}
}

// TestRetrieveAndDeleteResponse: a response is read back by its id from
// its session's events, with the text it was answered with; after a
// delete its id is unknown, to GET and as a previous_response_id, and a
// second delete is a 404.
func TestRetrieveAndDeleteResponse(t *testing.T) {
	r := newRig(t, narrationScript())
	c := r.client()
	res, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: apiserver.Alias,
		Input: responses.ResponseNewParamsInputUnion{OfString: oa.String("weather?")}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Responses.Get(context.Background(), res.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != res.ID || got.Status != "completed" || got.OutputText() != "Let me check.\n\nFinal answer B." || got.OutputText() != res.OutputText() ||
		got.Usage.TotalTokens != res.Usage.TotalTokens || got.CreatedAt == 0 {
		t.Fatalf("retrieved %+v\nanswered %+v", got, res)
	}
	if err := c.Responses.Delete(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	var apiErr *oa.Error
	if _, err := c.Responses.Get(context.Background(), res.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("GET after delete: %v", err)
	}
	if err := c.Responses.Delete(context.Background(), res.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("second delete: %v", err)
	}
	_, err = c.Responses.New(context.Background(), responses.ResponseNewParams{Model: apiserver.Alias, PreviousResponseID: oa.String(res.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: oa.String("and now?")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Error(), "deleted") {
		t.Fatalf("continuing a deleted response: %v", err)
	}
	if _, err := c.Responses.Get(context.Background(), "resp_nope", responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("GET of a foreign id: %v", err)
	}
	if n := len(r.llm.Requests()); n != 2 {
		t.Fatalf("%d model calls, want the first turn's 2", n)
	}
}

// TestSaturatedServerAnswers429: with MaxInFlight turn requests open, one
// more is refused at once with 429 and a Retry-After, and reaches no
// model; once one ends, requests are taken again.
func TestSaturatedServerAnswers429(t *testing.T) {
	slow := llmtest.Reply{Content: "slow answer", Delay: 700 * time.Millisecond}
	r := newRig(t, []llmtest.Reply{slow, slow, {Content: "after"}}, func(o *apiserver.Options) { o.MaxInFlight = 2 })
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, body := r.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": fmt.Sprint("slow ", i)}}}, nil)
			if resp.StatusCode != 200 {
				t.Errorf("slow request %d: %d %s", i, resp.StatusCode, body)
			}
		}(i)
	}
	waitFor(t, "two model calls in flight", func() bool { return len(r.llm.Requests()) == 2 })
	resp, body := r.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "one too many"}}}, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "rate_limit_error") || !strings.Contains(string(body), "max_in_flight") {
		t.Fatalf("a third request: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	wg.Wait()
	if n := len(r.llm.Requests()); n != 2 {
		t.Fatalf("the refused request reached the model: %d calls", n)
	}
	resp, body = r.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "after"}}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "after") {
		t.Fatalf("after the slow ones: %d %s", resp.StatusCode, body)
	}
}
