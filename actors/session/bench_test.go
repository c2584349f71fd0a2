package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
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
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// turnScript is one turn: three tool calls, then the answer.
func turnScript() []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "a", Name: "echo", Args: `{"n":1}`}, {ID: "b", Name: "echo", Args: `{"n":2}`}, {ID: "c", Name: "echo", Args: `{"n":3}`}},
			Prompt: 900, Completion: 30},
		{Content: "Three echoes done.", Prompt: 1000, Completion: 8},
	}
}

func benchServer(b *testing.B) *llmtest.Server {
	srv := llmtest.New()
	srv.Cycle = turnScript()
	srv.NoRecord = true
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkHTTPBaseline is the floor: the two streamed chat.completions
// calls of a turn through the SDK against the same instant server, nothing
// else.
func BenchmarkHTTPBaseline(b *testing.B) {
	srv := benchServer(b)
	p := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"})
	req := model.Request{Model: "m", System: "You are Hermes.", Messages: []schema.Message{{Role: "user", Content: "echo three times"}},
		Tools: tool.NewTools(echoTool{}).Specs()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for range 2 {
			if _, err := p.Complete(ctx, req, func(model.Delta) {}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

type nopRecorder struct{}

func (nopRecorder) Record(context.Context, string, ...schema.Payload) error { return nil }

// BenchmarkLoopTurn is one turn of the loop (3 parallel tool calls, two
// model calls) without actors or storage.
func BenchmarkLoopTurn(b *testing.B) {
	srv := benchServer(b)
	loop := &agent.Loop{Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}), Tools: tool.NewTools(echoTool{}),
		Exec: tool.DirectExecutor{Timeout: time.Minute}, Rec: nopRecorder{}, Cfg: agent.Config{Model: "m"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		loop.Budget = tool.NewBudget(90)
		tr := &history.Transcript{System: "You are Hermes."}
		if _, err := loop.Turn(ctx, tr, "t", "echo three times"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// BenchmarkSessionTurn is the whole path: session actor, ToolRunner actors,
// every event appended durably (fsync) to the embedded store. Each turn
// starts a new session so history does not grow across iterations.
func BenchmarkSessionTurn(b *testing.B) {
	srv := benchServer(b)
	store, err := embedded.Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	mgr := session.NewManager(sys, session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}), Exec: toolrun.NewPool(sys, 8, time.Minute), Cfg: agent.Config{Model: "m"}, MaxTurns: 90})
	defer mgr.Shutdown()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("bench-%d", i)
		i++
		if err := session.Create(ctx, store, id, session.Start{Source: "bench", Model: "m", System: "You are Hermes."}); err != nil {
			b.Fatal(err)
		}
		if res := mgr.Run(ctx, id, "echo three times", nil); res.Err != nil || !strings.HasPrefix(res.Answer, "Three") {
			b.Fatalf("%+v", res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
