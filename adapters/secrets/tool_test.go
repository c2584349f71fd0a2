package secrets_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/secrets"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

type events struct {
	mu sync.Mutex
	ps []schema.Payload
}

func (e *events) Record(_ context.Context, _ string, ps ...schema.Payload) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ps = append(e.ps, ps...)
	return nil
}

// TestRecordedToolResultsAreRedacted runs a real agent loop whose model
// asks a real terminal for the key, passed through to the command on
// purpose: the result the loop records and sends back is redacted.
func TestRecordedToolResultsAreRedacted(t *testing.T) {
	const key = "sk-test-loop-0123456789abcdefXYZ"
	t.Setenv("OPENAI_API_KEY", key)
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "a", Name: "terminal", Args: `{"command":"echo \"k=$OPENAI_API_KEY\"; env | grep OPENAI"}`},
			{ID: "b", Name: "terminal", Args: `{"command":"echo \"$OPENAI_API_KEY\" >&2; exit 1"}`},
		}},
		llmtest.Reply{Content: "done"})
	defer srv.Close()
	keep := secrets.New(os.Environ(), []string{"OPENAI_API_KEY"}, nil)
	term := terminal.Tools(terminal.Config{Env: func() []string { return keep.Env(os.Environ()) }})
	rec := &events{}
	loop := &agent.Loop{Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}), Tools: tool.NewTools(keep.Tools(term...)...),
		Exec: tool.DirectExecutor{Timeout: 5 * time.Second}, Rec: rec, Budget: tool.NewBudget(5), Cfg: agent.Config{Model: "m"},
		Env: tool.Env{WorkingDir: t.TempDir()}}
	if _, err := loop.Turn(context.Background(), &history.Transcript{}, "t", "show the key"); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, p := range rec.ps {
		if r, ok := p.(schema.ToolResultAdded); ok {
			results = append(results, r.Content+" | "+r.Error)
		}
	}
	all := strings.Join(results, "\n")
	if len(results) != 2 || strings.Contains(all, key) || strings.Count(all, "[REDACTED:OPENAI_API_KEY]") < 3 {
		t.Fatalf("recorded results:\n%s", all)
	}
	sent, _ := json.Marshal(srv.Requests()[1].Body)
	if strings.Contains(string(sent), key) {
		t.Fatal("the key went back to the model")
	}
}

type leaky struct{ err error }

func (leaky) Spec() model.ToolSpec { return model.ToolSpec{Name: "leaky"} }
func (leaky) Flags() tool.Flags    { return tool.Flags{ReadOnly: true} }
func (l leaky) Run(context.Context, json.RawMessage) (string, error) {
	if l.err == nil {
		panic("token ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 in a panic")
	}
	return "out AKIAIOSFODNN7EXAMPLE", l.err
}
func (leaky) Close() error { return errors.New("closed") }

func TestWrappedToolRedactsErrorsAndPanics(t *testing.T) {
	var s *secrets.Set
	cause := context.Canceled
	tool := s.Tool(leaky{err: errors.Join(errors.New("failed with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"), cause)})
	out, err := tool.Run(context.Background(), nil)
	if strings.Contains(out, "AKIA") || strings.Contains(err.Error(), "xoxb-") || !errors.Is(err, cause) || tool.Spec().Name != "leaky" || !tool.Flags().ReadOnly {
		t.Fatalf("%q %v", out, err)
	}
	if c, ok := tool.(interface{ Close() error }); !ok || c.Close() == nil {
		t.Fatal("Close not passed on")
	}
	defer func() {
		if p := recover(); p == nil || strings.Contains(p.(string), "ghp_") {
			t.Fatalf("panic %v", p)
		}
	}()
	s.Tool(leaky{}).Run(context.Background(), nil)
}
