package mcp

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
	"github.com/hermes-go/hermes/schema"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

// fake is the config of a fake server of mode over stdio.
func fake(mode string) ServerConfig {
	cmd, env := mcptest.Command(mode)
	return ServerConfig{Command: cmd, Env: env, ConnectTimeout: Seconds(20 * time.Second)}
}

// start starts a server and waits for its first attempt.
func start(t testing.TB, name string, cfg ServerConfig, opts *Options) *Server {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Backoff == 0 {
		opts.Backoff, opts.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	}
	if err := cfg.Validate(name); err != nil {
		t.Fatal(err)
	}
	s := NewServer(name, cfg, opts)
	s.Start()
	t.Cleanup(func() { s.Close() })
	s.Wait()
	return s
}

func toolOf(t testing.TB, s *Server, name string) tool.Tool {
	t.Helper()
	for _, x := range s.Tools() {
		if x.Spec().Name == name {
			return x
		}
	}
	var names []string
	for _, x := range s.Tools() {
		names = append(names, x.Spec().Name)
	}
	t.Fatalf("no tool %s among %v (status %+v)", name, names, s.Status())
	return nil
}

func run(t testing.TB, tool tool.Tool, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return tool.Run(ctx, json.RawMessage(args))
}

// eventually polls cond (connections and notifications are asynchronous);
// the bound is generous, what is asserted is the outcome.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustContain(t testing.TB, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("%q does not contain %q", got, w)
		}
	}
}

// recorder is a session's Env: it keeps what tools record and answers
// questions with a script.
type recorder struct {
	mu      sync.Mutex
	events  []schema.Payload
	answers []string
	asked   []tool.Question
}

func (r *recorder) Ask(_ context.Context, q tool.Question) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, q)
	if len(r.answers) == 0 {
		return "", context.DeadlineExceeded
	}
	a := r.answers[0]
	r.answers = r.answers[1:]
	return a, nil
}

func (r *recorder) env() *tool.Env {
	return &tool.Env{SessionID: "s1", TurnID: "t1", Values: tool.NewSessionValues(), Asker: r,
		Record: func(_ context.Context, ps ...schema.Payload) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, ps...)
			return nil
		}}
}
