package openai_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

// TestConcurrentCallsKeepTheirBodies: calls made at once on one provider,
// with OPENAI_BASE_URL and OPENAI_API_KEY in the environment (as on a
// cluster node), each send their own request and get their own answer.
// The SDK appends a call's options to the client's; with the spare
// capacity those variables left, concurrent calls wrote into the same
// slots and one call sent another's body (a session recorded the answer to
// another conversation).
func TestConcurrentCallsKeepTheirBodies(t *testing.T) {
	srv := llmtest.New()
	srv.NoRecord = true
	srv.Route = func(r llmtest.Request) *llmtest.Reply {
		msgs, _ := r.Body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		return &llmtest.Reply{Content: "answer to " + fmt.Sprint(last["content"]), Delay: 5 * time.Millisecond}
	}
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				text := fmt.Sprintf("message %d of caller %d", i, w)
				resp, err := p.Complete(context.Background(), model.Request{Model: "gpt-4o-mini", Messages: []schema.Message{{Role: "user", Content: text}}}, func(model.Delta) {})
				if err != nil {
					t.Error(err)
					return
				}
				if resp.Content != "answer to "+text {
					t.Errorf("%q answered %q", text, resp.Content)
					return
				}
			}
		}()
	}
	wg.Wait()
}
