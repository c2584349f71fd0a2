package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/secrets"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/schema"
)

// gotArgs is a tool that keeps the arguments it was called with.
type gotArgs struct {
	mu   sync.Mutex
	args []string
}

func (*gotArgs) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "deploy", Description: "deploy", Parameters: map[string]any{"type": "object"}}
}
func (*gotArgs) Flags() tool.Flags { return tool.Flags{} }
func (g *gotArgs) Run(_ context.Context, a json.RawMessage) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.args = append(g.args, string(a))
	return "deployed", nil
}

// TestModelWrittenSecretsAreRedactedInTheLog: a model that writes a key
// Hermes holds (by value) and a key-shaped string (by shape) into its
// reasoning, a tool call's arguments and its answer leaves neither in the
// event log nor in the search index built from it; the arguments are
// still valid JSON, and the tool got them as the model wrote them.
func TestModelWrittenSecretsAreRedactedInTheLog(t *testing.T) {
	const (
		held   = "hunter2-horse-battery-staple" // no key shape: known by value only
		shaped = "sk-proj-Q7mZx9kLw2Vb8NcR4tY6uP0a"
	)
	keep := secrets.New([]string{"DEPLOY_PASSWORD=" + held}, nil, nil)
	if r := keep.Redact(shaped); r == shaped {
		t.Fatalf("precondition: the set does not know the shape of %s", shaped)
	}
	args := fmt.Sprintf(`{"auth": "Bearer %s", "password":"%s", "retries": 3, "tags":["prod", "%s"], "opts":{"dry":false,"note":"a\u0020%s"}}`,
		shaped, held, held, shaped)
	answer := fmt.Sprintf("Deployed with %s; the password is %s.", shaped, held)
	srv := llmtest.New(
		llmtest.Reply{Reasoning: "I will authenticate with " + shaped + " and " + held,
			ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "deploy", Args: args}}},
		llmtest.Reply{Content: "<think>the key was " + held + "</think>" + answer})
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	got := &gotArgs{}
	sys := actors.NewSystem(zerolog.Nop())
	mgr := session.NewManager(sys, session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(keep.Tools(got)...), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10,
		Redact: keep.Redact})
	t.Cleanup(func() {
		mgr.Shutdown()
		sys.Shutdown()
		srv.Close()
		store.Close()
	})
	ctx := context.Background()
	if err := session.Create(ctx, store, "s1", session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	res := mgr.Run(ctx, "s1", "deploy the app", nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	leaks := func(where, s string) {
		t.Helper()
		for _, v := range []string{held, shaped} {
			if strings.Contains(s, v) {
				t.Errorf("%s holds %s: %s", where, v, s)
			}
		}
	}
	leaks("the answer", res.Answer)
	if !strings.Contains(res.Answer, "[REDACTED:DEPLOY_PASSWORD]") {
		t.Errorf("answer %q does not say which secret was redacted", res.Answer)
	}

	// The tool ran with the arguments as written.
	if len(got.args) != 1 || got.args[0] != args {
		t.Errorf("the tool got %q, want the model's arguments %q", got.args, args)
	}

	// Every event in the log, read back from the store.
	all, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var started, calls int
	for _, r := range all {
		leaks(r.Type, string(r.Payload))
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		var recordedArgs []string
		switch e := p.(type) {
		case schema.ToolCallStarted:
			started++
			recordedArgs = append(recordedArgs, e.Arguments)
		case schema.AssistantMessageAdded:
			leaks("decoded AssistantMessageAdded", e.Content+" "+e.Reasoning)
			for _, c := range e.ToolCalls {
				calls++
				recordedArgs = append(recordedArgs, c.Function.Arguments)
			}
			if len(e.ToolCalls) > 0 && !strings.Contains(e.Reasoning, "[REDACTED:") {
				t.Errorf("reasoning %q was not redacted", e.Reasoning)
			}
		}
		for _, a := range recordedArgs {
			leaks("decoded arguments", a)
			var v struct {
				Auth     string
				Password string
				Retries  int
				Tags     []string
				Opts     struct{ Dry bool }
			}
			if err := json.Unmarshal([]byte(a), &v); err != nil {
				t.Fatalf("recorded arguments are not JSON any more: %v: %s", err, a)
			}
			if v.Retries != 3 || len(v.Tags) != 2 || v.Tags[0] != "prod" || !strings.HasPrefix(v.Auth, "Bearer ") || v.Password != "[REDACTED:DEPLOY_PASSWORD]" {
				t.Errorf("recorded arguments lost more than the secrets: %s", a)
			}
		}
	}
	if started != 1 || calls != 1 {
		t.Fatalf("recorded %d ToolCallStarted and %d calls, want 1 and 1", started, calls)
	}
	// The model's next request carries the history as recorded.
	if reqs := srv.Requests(); len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	} else {
		leaks("the second model request", string(reqs[1].Raw))
	}

	// Search is built from the log: the secrets are not found, the
	// answer is.
	idx, err := search.Open(filepath.Join(dir, "search.bleve"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if _, err := projections.NewRunner(store, zerolog.Nop(), idx).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := idx.Search(ctx, search.Query{Text: "deployed"}); err != nil || len(r.Hits) == 0 {
		t.Fatalf("search for the answer: %v %+v", err, r)
	}
	for _, q := range []string{`"` + shaped + `"`, `"` + held + `"`, "hunter2"} {
		r, err := idx.Search(ctx, search.Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) > 0 {
			t.Errorf("search for %s finds %+v", q, r.Hits)
		}
	}
}
