package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

const geminiFixtures = `{"fixtures": [
  {"match": {"userMessage": "say hello"}, "response": {"content": "Hello from Gemini."}},
  {"match": {"userMessage": "list the files", "sequenceIndex": 0},
   "response": {"toolCalls": [{"name": "terminal", "arguments": {"command": "ls"}}]}},
  {"match": {"userMessage": "list the files", "sequenceIndex": 1},
   "response": {"content": "There are two files: a.txt and b.txt."}},
  {"match": {"userMessage": "too fast"}, "response": {"error": {"message": "Resource has been exhausted", "type": "RESOURCE_EXHAUSTED"}, "status": 429}}
]}`

// geminiProvider is the native Gemini provider the catalog's gemini entry
// builds, pointed at aimock.
func geminiProvider(t *testing.T, base string) model.Provider {
	t.Helper()
	p, err := llm.New(llm.Config{Provider: "gemini", BaseURL: base + "/v1beta", APIKey: "gemini-test-key"})
	if err != nil {
		t.Fatal(err)
	}
	if p.APIMode() != model.ModeGemini || p.Name() != "gemini" {
		t.Fatalf("provider %s speaks %s", p.Name(), p.APIMode())
	}
	return p
}

// TestGeminiAgainstAimock checks the native Gemini provider against
// aimock's implementation of streamGenerateContent: text streamed as
// deltas, a tool-call round trip through the agent loop, and an error
// status the recovery ladder can classify.
func TestGeminiAgainstAimock(t *testing.T) {
	base := startAimock(t, geminiFixtures)
	p := geminiProvider(t, base)

	t.Run("text", func(t *testing.T) {
		var deltas []string
		resp, err := p.Complete(context.Background(), model.Request{Model: "gemini-3.5-flash", System: "You are Hermes.",
			Messages: []schema.Message{{Role: "user", Content: "say hello"}}}, func(d model.Delta) {
			if d.Kind == model.DeltaText {
				deltas = append(deltas, d.Text)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content != "Hello from Gemini." || resp.FinishReason != "stop" || strings.Join(deltas, "") != resp.Content {
			t.Fatalf("response %+v, deltas %q", resp, deltas)
		}
		// The key travels in Gemini's header, not as a bearer token.
		// (aimock's journal redacts its value).
		path, hdr := lastRequest(t, base)
		if hdr["x-goog-api-key"] == "" || hdr["authorization"] != "" || !strings.HasPrefix(path, "/v1beta/models/gemini-3.5-flash:streamGenerateContent") {
			t.Fatalf("request %s %v", path, hdr)
		}
	})

	t.Run("tool call round trip", func(t *testing.T) {
		calls := 0
		r := &rec{}
		loop := &agent.Loop{Provider: p, Tools: tool.NewTools(lsTool{&calls}), Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Rec: r,
			Budget: tool.NewBudget(5), Cfg: agent.Config{Model: "gemini-3.5-flash"}}
		out, err := loop.Turn(context.Background(), &history.Transcript{System: "You are Hermes."}, "t", "list the files")
		if err != nil {
			t.Fatal(err)
		}
		if out != "There are two files: a.txt and b.txt." || calls != 1 {
			t.Fatalf("answer %q after %d tool calls", out, calls)
		}
		var types []string
		for _, p := range r.ps {
			types = append(types, p.EventType())
		}
		if strings.Join(types, " ") != "UserMessageAdded AssistantMessageAdded ToolCallStarted ToolResultAdded AssistantMessageAdded TurnCompleted" {
			t.Fatalf("events %v", types)
		}
		// The second call carried the function call back with the
		// function's response under the same ID (as aimock reads them).
		var body struct {
			Messages []struct {
				Role       string
				Content    any
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string
					Function struct{ Name string }
				} `json:"tool_calls"`
			}
		}
		raw := lastBody(t, base)
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) != 4 {
			t.Fatalf("second request %s: %v", raw, err)
		}
		call, result := body.Messages[2], body.Messages[3]
		if len(call.ToolCalls) != 1 || call.ToolCalls[0].Function.Name != "terminal" || result.Role != "tool" ||
			result.ToolCallID != call.ToolCalls[0].ID || !strings.Contains(fmt.Sprint(result.Content), `a.txt\nb.txt`) {
			t.Fatalf("second request %s", raw)
		}
	})

	t.Run("error", func(t *testing.T) {
		_, err := p.Complete(context.Background(), model.Request{Model: "gemini-3.5-flash",
			Messages: []schema.Message{{Role: "user", Content: "too fast"}}}, func(model.Delta) {})
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.Status != 429 || !strings.Contains(pe.Message, "Resource has been exhausted") {
			t.Fatalf("error %#v", err)
		}
		if c := model.Classify(err); c != model.ClassRateLimit {
			t.Fatalf("a 429 classified as %s", c)
		}
	})
}

// lastBody is the body of the last request in aimock's journal, as aimock
// understood it.
func lastBody(t *testing.T, base string) json.RawMessage {
	t.Helper()
	resp, err := http.Get(base + "/v1/_requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries []struct{ Body json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil || len(entries) == 0 {
		t.Fatalf("journal: %v", err)
	}
	return entries[len(entries)-1].Body
}

// lastRequest reads aimock's journal: the path and headers of the last
// request it served.
func lastRequest(t *testing.T, base string) (string, map[string]string) {
	t.Helper()
	resp, err := http.Get(base + "/v1/_requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var entries []struct {
		Path    string            `json:"path"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(body, &entries); err != nil || len(entries) == 0 {
		t.Fatalf("journal %s: %v", body, err)
	}
	e := entries[len(entries)-1]
	return e.Path, e.Headers
}
