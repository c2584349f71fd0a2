package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestNodeOpenAIClient runs the official `openai` npm client (openai@6,
// pinned in .ci/node) against the server: testdata/client.mjs.
func TestNodeOpenAIClient(t *testing.T) {
	modules := os.Getenv("HERMES_NODE_MODULES")
	if modules == "" {
		t.Skip("HERMES_NODE_MODULES is not set: run `npm ci --prefix .ci/node` and set it to .ci/node/node_modules (.ci/run does)")
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "index.mjs")); err != nil {
		t.Fatalf("HERMES_NODE_MODULES=%s has no openai package: %v", modules, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("HERMES_NODE_MODULES is set but node is not on PATH")
	}
	script := append(weatherScript(),
		llmtest.Reply{Content: "Tomorrow: rain.", Prompt: 200, Completion: 4},
		llmtest.Reply{Content: "Comté.", Prompt: 30, Completion: 3},
		llmtest.Reply{Content: "Roquefort.", Prompt: 60, Completion: 4},
	)
	r := newRig(t, script)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/client.mjs")
	cmd.Env = append(os.Environ(), "HERMES_NODE_MODULES="+modules, "HERMES_API_BASE="+r.url+"/v1", "HERMES_API_KEY="+r.key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Completion struct {
			Content, Finish, Object, Session string
			TotalTokens                      int `json:"total_tokens"`
		}
		Stream struct {
			Text, Finish string
			Chunks       int
			TotalTokens  int `json:"total_tokens"`
		}
		ResponsesStream struct {
			Types                    []string
			Deltas, ID, Status, Text string
		} `json:"responses_stream"`
		Responses struct {
			Text, Status, Previous string
			InputTokens            int `json:"input_tokens"`
		}
		WrongKey string `json:"wrong_key"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %q: %v", stdout.String(), err)
	}
	c := got.Completion
	if c.Content != "It is 12°C and sunny in Paris." || c.Finish != "stop" || c.Object != "chat.completion" || c.TotalTokens != 289 || c.Session == "" {
		t.Fatalf("completion %+v", c)
	}
	if r.tools.calls.Load() != 1 {
		t.Fatal("the weather tool did not run on the server")
	}
	s := got.Stream
	if s.Text != "Tomorrow: rain." || s.Finish != "stop" || s.TotalTokens != 204 || s.Chunks < 3 {
		t.Fatalf("stream %+v", s)
	}
	// The stream continued the first session: its history reached the model.
	if !strings.Contains(string(r.llm.Requests()[2].Raw), "sunny in Paris") {
		t.Fatal("the streamed request did not continue the session")
	}
	rs := got.ResponsesStream
	if rs.Deltas != "Comté." || rs.Text != "Comté." || rs.Status != "completed" || !strings.HasPrefix(rs.ID, "resp_") ||
		strings.Join(rs.Types, ",") != "response.created,response.in_progress,response.output_item.added,response.content_part.added,response.output_text.delta,response.output_text.done,response.content_part.done,response.output_item.done,response.completed" {
		t.Fatalf("responses stream %+v", rs)
	}
	if got.Responses.Text != "Roquefort." || got.Responses.Previous != rs.ID || got.Responses.InputTokens != 60 {
		t.Fatalf("responses %+v", got.Responses)
	}
	if !strings.Contains(string(r.llm.Requests()[4].Raw), "Name a French cheese.") {
		t.Fatal("previous_response_id did not continue the session")
	}
	if got.WrongKey != "AuthenticationError 401" {
		t.Fatalf("wrong key: %s", got.WrongKey)
	}
}
