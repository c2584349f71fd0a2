package llm_test

import (
	"context"
	"errors"
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

// TestBedrockAgainstAimock checks the Bedrock provider against aimock's
// implementation of ConverseStream (AWS event-stream framing, SigV4-signed
// requests): text streamed as deltas, a tool-call round trip through the
// agent loop, and a throttling error the recovery ladder can classify.
func TestBedrockAgainstAimock(t *testing.T) {
	base := startAimock(t, geminiFixtures)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	p, err := llm.New(llm.Config{Provider: "bedrock", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	if p.APIMode() != model.ModeBedrock || p.Name() != "bedrock" {
		t.Fatalf("provider %s speaks %s", p.Name(), p.APIMode())
	}
	const modelID = "us.anthropic.claude-sonnet-4-6"

	t.Run("text", func(t *testing.T) {
		var deltas []string
		resp, err := p.Complete(context.Background(), model.Request{Model: modelID, System: "You are Hermes.",
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
		// Signed with SigV4 (aimock's journal redacts the signature).
		path, hdr := lastRequest(t, base)
		if path != "/model/"+modelID+"/converse-stream" || hdr["authorization"] == "" || hdr["x-amz-date"] == "" {
			t.Fatalf("request %s %v", path, hdr)
		}
	})

	t.Run("tool call round trip", func(t *testing.T) {
		calls := 0
		r := &rec{}
		loop := &agent.Loop{Provider: p, Tools: tool.NewTools(lsTool{&calls}), Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Rec: r,
			Budget: tool.NewBudget(5), Cfg: agent.Config{Model: modelID}}
		out, err := loop.Turn(context.Background(), &history.Transcript{System: "You are Hermes."}, "t", "list the files")
		if err != nil {
			t.Fatal(err)
		}
		if out != "There are two files: a.txt and b.txt." || calls != 1 {
			t.Fatalf("answer %q after %d tool calls", out, calls)
		}
		raw := string(lastBody(t, base))
		if !strings.Contains(raw, `"tool_call_id"`) || !strings.Contains(raw, `a.txt\nb.txt`) {
			t.Fatalf("second request %s", raw)
		}
	})

	// aimock writes Bedrock errors in Anthropic's body shape, which the AWS
	// SDK cannot read the message of; the status decides (the real body
	// shape is tested in package bedrock).
	t.Run("error", func(t *testing.T) {
		_, err := p.Complete(context.Background(), model.Request{Model: modelID,
			Messages: []schema.Message{{Role: "user", Content: "too fast"}}}, func(model.Delta) {})
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter <= 0 {
			t.Fatalf("error %#v", err)
		}
		if c := model.Classify(err); c != model.ClassRateLimit {
			t.Fatalf("a 429 classified as %s", c)
		}
	})
}
