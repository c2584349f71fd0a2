package agent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return nil
}

func endpoint(srv *llmtest.Server, name, modelName string, keys ...string) *model.Endpoint {
	return &model.Endpoint{Name: name, Model: modelName, Keys: keys, Build: func(key string) model.Provider {
		return openai.NewChat(openai.Options{Provider: name, BaseURL: srv.URL + "/v1", APIKey: key, StallTimeout: 300 * time.Millisecond})
	}}
}

func ladderTurn(t *testing.T, lad *model.Ladder) (string, []schema.Payload, error) {
	t.Helper()
	rec := &memRecorder{}
	loop := &agent.Loop{Provider: lad.ForTurn(), Tools: tool.NewTools(), Exec: tool.DirectExecutor{}, Rec: rec, Budget: tool.NewBudget(10), Cfg: agent.Config{Model: "main-model"}}
	out, err := loop.Turn(context.Background(), &history.Transcript{}, "t", "hello")
	return out, rec.all(), err
}

func TestLadder429ThenOK(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Status: 429, ErrorBody: `{"error":{"message":"Rate limit reached","type":"rate_limit"}}`, Header: map[string]string{"Retry-After": "7"}},
		llmtest.Reply{Content: "fine now"})
	defer srv.Close()
	sl := &sleeps{}
	out, _, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	if err != nil || out != "fine now" {
		t.Fatalf("%q %v", out, err)
	}
	if len(sl.d) != 1 || sl.d[0] != 7*time.Second {
		t.Fatalf("waited %v, want Retry-After's 7s", sl.d)
	}
}

func TestLadder500ThriceThenFallback(t *testing.T) {
	fail := llmtest.Reply{Status: 500, ErrorBody: `{"error":{"message":"internal error","type":"server_error"}}`}
	primary := llmtest.New(fail, fail, fail, llmtest.Reply{Content: "primary back"})
	backup := llmtest.New(llmtest.Reply{Content: "from the backup"})
	defer primary.Close()
	defer backup.Close()
	sl := &sleeps{}
	lad := &model.Ladder{Endpoints: []*model.Endpoint{endpoint(primary, "openai", ""), endpoint(backup, "openrouter", "backup-model")},
		Backoff: model.Backoff{Retries: 2, Base: time.Second, Sleep: sl.sleep}}
	out, evs, err := ladderTurn(t, lad)
	if err != nil || out != "from the backup" {
		t.Fatalf("%q %v", out, err)
	}
	if len(primary.Requests()) != 3 || backup.Requests()[0].Body["model"] != "backup-model" {
		t.Fatalf("primary got %d calls; backup model %v", len(primary.Requests()), backup.Requests()[0].Body["model"])
	}
	if len(sl.d) != 2 || sl.d[0] < 800*time.Millisecond || sl.d[0] > 1200*time.Millisecond || sl.d[1] < 1600*time.Millisecond {
		t.Fatalf("backoff %v, want ~1s then ~2s", sl.d)
	}
	var fb *schema.ProviderFallback
	var am schema.AssistantMessageAdded
	for _, p := range evs {
		switch e := p.(type) {
		case schema.ProviderFallback:
			fb = &e
		case schema.AssistantMessageAdded:
			am = e
		}
	}
	if fb == nil || fb.FromProvider != "openai" || fb.ToProvider != "openrouter" || fb.ToModel != "backup-model" || !strings.HasPrefix(fb.Reason, "server") {
		t.Fatalf("fallback event %+v", fb)
	}
	if am.Provider != "openrouter" || am.Model != "backup-model" {
		t.Fatalf("answer recorded as %s/%s", am.Provider, am.Model)
	}
	// The next turn tries the primary again.
	out, _, err = ladderTurn(t, lad)
	if err != nil || out != "primary back" {
		t.Fatalf("next turn: %q %v", out, err)
	}
}

func TestLadder401RefreshesKey(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Status: 401, ErrorBody: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`}, llmtest.Reply{Content: "authorised"})
	defer srv.Close()
	ep := endpoint(srv, "openai", "", "old-key")
	ep.Refresh = func() string { return "new-key" }
	out, _, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{ep}})
	if err != nil || out != "authorised" {
		t.Fatalf("%q %v", out, err)
	}
	reqs := srv.Requests()
	if reqs[0].Header.Get("Authorization") != "Bearer old-key" || reqs[1].Header.Get("Authorization") != "Bearer new-key" {
		t.Fatalf("keys %q then %q", reqs[0].Header.Get("Authorization"), reqs[1].Header.Get("Authorization"))
	}
}

func TestLadderRotatesKeysOn429(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Status: 429, ErrorBody: `{"error":{"message":"quota per minute"}}`}, llmtest.Reply{Content: "second key works"})
	defer srv.Close()
	sl := &sleeps{}
	out, _, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "", "k1", "k2")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	if err != nil || out != "second key works" || len(sl.d) != 0 {
		t.Fatalf("%q %v slept %v", out, err, sl.d)
	}
	if srv.Requests()[1].Header.Get("Authorization") != "Bearer k2" {
		t.Fatal("the pool's next key was not used")
	}
}

func TestLadderBillingNeverRetriedOnSameProvider(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Status: 402, ErrorBody: `{"error":{"message":"insufficient credits"}}`}, llmtest.Reply{Content: "never"})
	defer srv.Close()
	sl := &sleeps{}
	_, evs, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	var ab *model.AbortError
	if !errors.As(err, &ab) || ab.Class != model.ClassBilling || !strings.Contains(err.Error(), "top it up") {
		t.Fatalf("%v", err)
	}
	if len(srv.Requests()) != 1 || len(sl.d) != 0 {
		t.Fatalf("402 retried: %d calls", len(srv.Requests()))
	}
	if _, ok := evs[len(evs)-1].(schema.TurnInterrupted); !ok {
		t.Fatalf("last event %T", evs[len(evs)-1])
	}
}

func TestLadderStalledStreamThenOK(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "never finishes", StallAfter: 10 * time.Second}, llmtest.Reply{Content: "after the stall"})
	defer srv.Close()
	start := time.Now()
	out, _, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "")}})
	if err != nil || out != "after the stall" || time.Since(start) > 5*time.Second {
		t.Fatalf("%q %v after %s", out, err, time.Since(start))
	}
}

func TestLadderLowersMaxTokens(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens.","type":"invalid_request_error"}}`},
		llmtest.Reply{Content: "ok"})
	defer srv.Close()
	lad := (&model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "")}}).ForTurn()
	_, err := lad.Complete(context.Background(), model.Request{Model: "m", MaxTokens: 100000, Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if mt := srv.Requests()[1].Body["max_tokens"]; mt != float64(16384) {
		t.Fatalf("retried with max_tokens %v", mt)
	}
}

func TestClassify(t *testing.T) {
	pe := func(status int, msg string) error {
		return &model.ProviderError{Provider: "p", Status: status, Message: msg}
	}
	cases := map[model.ErrorClass]error{
		model.ClassRateLimit:         pe(429, "slow down"),
		model.ClassBilling:           pe(400, "You exceeded your current quota, please check your plan and billing details"),
		model.ClassAuth:              pe(401, "invalid x-api-key"),
		model.ClassOverloaded:        pe(529, "Overloaded"),
		model.ClassServer:            pe(502, "bad gateway"),
		model.ClassContextOverflow:   pe(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."),
		model.ClassPayloadTooLarge:   pe(413, "request entity too large"),
		model.ClassModelNotFound:     pe(404, "The model `gpt-9` does not exist"),
		model.ClassContentPolicy:     pe(400, "Your request was rejected as a result of our safety system"),
		model.ClassThinkingSignature: pe(400, "messages.1.content.0: Invalid `signature` in `thinking` block"),
		model.ClassInvalidUnicode:    pe(400, "invalid unicode: lone surrogate"),
		model.ClassTimeout:           &model.ProviderError{Provider: "p", Transport: true, Message: "connection reset"},
		model.ClassFormat:            pe(400, "messages: field required"),
	}
	for want, err := range cases {
		if got := model.Classify(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

// silentServer is a TCP listener that accepts connections and never sends
// a byte: a model server that is stuck, or a port something else holds.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read the request, answer nothing
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A server that accepts the connection and never answers fails the call
// after the first-byte timeout, with an error naming the server, after a
// line on the status saying it has not answered yet. It is not retried on
// the same server (each attempt would cost the whole timeout again; it
// used to be retried five times behind 60 s stalls, 337 s in all) but the
// fallback is tried at once. In every API mode.
func TestLadderServerThatNeverAnswers(t *testing.T) {
	host := silentServer(t)
	builds := map[string]func() model.Provider{
		"chat_completions": func() model.Provider {
			return openai.NewChat(openai.Options{BaseURL: "http://" + host + "/v1", FirstByteTimeout: 800 * time.Millisecond})
		},
		"codex_responses": func() model.Provider {
			return openai.NewResponses(openai.Options{BaseURL: "http://" + host + "/v1", FirstByteTimeout: 800 * time.Millisecond})
		},
		"anthropic_messages": func() model.Provider {
			return anthropic.New(anthropic.Options{BaseURL: "http://" + host, APIKey: "k", FirstByteTimeout: 800 * time.Millisecond})
		},
	}
	for mode, build := range builds {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			var status []string
			sl := &sleeps{}
			lad := &model.Ladder{Endpoints: []*model.Endpoint{{Name: "local", Build: func(string) model.Provider { return build() }}},
				Backoff: model.Backoff{Sleep: sl.sleep}, Status: func(s string) { mu.Lock(); status = append(status, s); mu.Unlock() }}
			start := time.Now()
			_, err := lad.ForTurn().Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
			took := time.Since(start)
			var abort *model.AbortError
			if !errors.As(err, &abort) || abort.Class != model.ClassNoAnswer || !strings.Contains(err.Error(), "no answer from "+host+" in 800ms") ||
				!strings.Contains(err.Error(), "agent.first_byte_timeout") {
				t.Fatalf("error %v", err)
			}
			if took < 800*time.Millisecond || took > 5*time.Second || len(sl.d) != 0 {
				t.Fatalf("failed after %s with backoffs %v: want one attempt of 800ms", took, sl.d)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(status) == 0 || !strings.HasPrefix(status[0], "no answer from "+host+" yet (") {
				t.Fatalf("status %q", status)
			}
		})
	}
	// With a fallback, the fallback answers at once.
	backup := llmtest.New(llmtest.Reply{Content: "from the backup"})
	defer backup.Close()
	lad := &model.Ladder{Endpoints: []*model.Endpoint{{Name: "local", Build: func(string) model.Provider { return builds["chat_completions"]() }}, endpoint(backup, "openrouter", "backup-model")}}
	out, evs, err := ladderTurn(t, lad)
	if err != nil || out != "from the backup" {
		t.Fatalf("%q %v", out, err)
	}
	fell := false
	for _, e := range evs {
		if fb, ok := e.(schema.ProviderFallback); ok && strings.HasPrefix(fb.Reason, "no_answer") {
			fell = true
		}
	}
	if !fell {
		t.Fatalf("no fallback event for no_answer: %v", evs)
	}
}

// A server that answers slowly but within the first-byte timeout is
// waited for (the stall timeout does not cut the wait short), and the
// status says it is being waited for.
func TestLadderSlowFirstAnswer(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "worth the wait", Delay: 700 * time.Millisecond})
	defer srv.Close()
	var status []string
	var mu sync.Mutex
	lad := &model.Ladder{Endpoints: []*model.Endpoint{{Name: "local", Build: func(string) model.Provider {
		return openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", StallTimeout: 200 * time.Millisecond, FirstByteTimeout: 2 * time.Second})
	}}}, Status: func(s string) { mu.Lock(); status = append(status, s); mu.Unlock() }}
	resp, err := lad.ForTurn().Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	if err != nil || resp.Content != "worth the wait" {
		t.Fatalf("%q %v", resp.Content, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(status) != 1 || !strings.Contains(status[0], "no answer from 127.0.0.1:") || !strings.Contains(status[0], "yet (") {
		t.Fatalf("status %q", status)
	}
}
