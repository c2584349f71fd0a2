package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/anthropic"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

// modeEndpoint is an endpoint speaking one API mode to srv.
func modeEndpoint(srv *llmtest.Server, mode string, callTimeout time.Duration) *model.Endpoint {
	return &model.Endpoint{Name: mode, Build: func(key string) model.Provider {
		switch mode {
		case model.ModeAnthropic:
			return anthropic.New(anthropic.Options{Provider: mode, BaseURL: srv.URL, APIKey: key, StallTimeout: 300 * time.Millisecond, CallTimeout: callTimeout})
		case model.ModeResponses:
			return openai.NewResponses(openai.Options{Provider: mode, BaseURL: srv.URL + "/v1", APIKey: key, StallTimeout: 300 * time.Millisecond, CallTimeout: callTimeout})
		}
		return openai.NewChat(openai.Options{Provider: mode, BaseURL: srv.URL + "/v1", APIKey: key, StallTimeout: 300 * time.Millisecond, CallTimeout: callTimeout})
	}}
}

type statuses struct {
	mu sync.Mutex
	s  []string
}

func (s *statuses) add(m string) {
	s.mu.Lock()
	s.s = append(s.s, m)
	s.mu.Unlock()
}

func (s *statuses) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.s, "\n")
}

func answers(evs []schema.Payload) []schema.AssistantMessageAdded {
	var out []schema.AssistantMessageAdded
	for _, p := range evs {
		if a, ok := p.(schema.AssistantMessageAdded); ok {
			out = append(out, a)
		}
	}
	return out
}

const paris = "The capital of France is Paris."

// TestCutStreamRetried: in every API mode, a stream cut mid-answer is
// retried and the turn records the next attempt's whole answer only; the
// status says the partial text already shown is discarded. Before, the cut
// text was recorded as the answer with finish_reason stop.
func TestCutStreamRetried(t *testing.T) {
	for _, mode := range []string{model.ModeChatCompletions, model.ModeResponses, model.ModeAnthropic} {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.New(llmtest.Reply{Content: paris, CutAfter: 3, Reset: mode == model.ModeAnthropic}, llmtest.Reply{Content: paris})
			defer srv.Close()
			sl, st := &sleeps{}, &statuses{}
			out, evs, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{modeEndpoint(srv, mode, 0)}, Backoff: model.Backoff{Sleep: sl.sleep}, Status: st.add})
			if err != nil || out != paris {
				t.Fatalf("%q %v", out, err)
			}
			if a := answers(evs); len(a) != 1 || a[0].Content != paris || a[0].FinishReason != "stop" {
				t.Fatalf("recorded answers %+v", a)
			}
			if len(srv.Requests()) != 2 || len(sl.d) != 1 {
				t.Fatalf("%d calls, slept %v", len(srv.Requests()), sl.d)
			}
			if !strings.Contains(st.String(), "stream_cut from "+mode+" after") || !strings.Contains(st.String(), "partial answer is discarded") {
				t.Fatalf("statuses:\n%s", st)
			}
		})
	}
}

// TestCutEveryTime: a stream cut on every attempt ends the turn with an
// error naming the cut, after the retries, and nothing of the answer is
// recorded.
func TestCutEveryTime(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: paris, CutAfter: 2})
	defer srv.Close()
	sl := &sleeps{}
	_, evs, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(srv, "openai", "")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	var ab *model.AbortError
	if !errors.As(err, &ab) || ab.Class != model.ClassStreamCut || !errors.Is(err, model.ErrStreamCut) || !strings.Contains(err.Error(), "stream was cut") {
		t.Fatalf("%v", err)
	}
	if len(srv.Requests()) != 4 || len(sl.d) != 3 {
		t.Fatalf("%d calls, slept %v: want 1 + 3 retries", len(srv.Requests()), sl.d)
	}
	if a := answers(evs); len(a) != 0 {
		t.Fatalf("a cut answer was recorded: %+v", a)
	}
	last, ok := evs[len(evs)-1].(schema.TurnInterrupted)
	if !ok || !strings.Contains(last.Reason, "stream was cut") {
		t.Fatalf("last event %+v", evs[len(evs)-1])
	}
}

// TestMalformedNotRetried: a malformed answer is not asked for again from
// the same server; the ladder falls back at once.
func TestMalformedNotRetried(t *testing.T) {
	page := llmtest.Reply{Body: "<html><title>Sign in to the proxy</title></html>"}
	primary := llmtest.New(page, page)
	backup := llmtest.New(llmtest.Reply{Content: "from the backup"})
	defer primary.Close()
	defer backup.Close()
	sl := &sleeps{}
	out, evs, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(primary, "openai", ""), endpoint(backup, "openrouter", "b")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	if err != nil || out != "from the backup" || len(primary.Requests()) != 1 || len(sl.d) != 0 {
		t.Fatalf("%q %v: %d calls to the primary, slept %v", out, err, len(primary.Requests()), sl.d)
	}
	var fb *schema.ProviderFallback
	for _, p := range evs {
		if f, ok := p.(schema.ProviderFallback); ok {
			fb = &f
		}
	}
	if fb == nil || !strings.HasPrefix(fb.Reason, "malformed_response") || !strings.Contains(fb.Reason, "Sign in to the proxy") {
		t.Fatalf("fallback %+v", fb)
	}
	// Alone, the ladder gives up with what to check.
	_, _, err = ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{endpoint(primary, "openai", "")}, Backoff: model.Backoff{Sleep: sl.sleep}})
	var ab *model.AbortError
	if !errors.As(err, &ab) || ab.Class != model.ClassMalformed || !strings.Contains(err.Error(), "check base_url and api_mode") || len(primary.Requests()) != 2 {
		t.Fatalf("%v after %d calls", err, len(primary.Requests()))
	}
}

// TestEndlessStreamHitsCallTimeout: a server that keeps sending empty
// chunks holds the turn only until the call's deadline, and the call is
// not started again on the same provider.
func TestEndlessStreamHitsCallTimeout(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{TrickleEvery: 20 * time.Millisecond})
	defer srv.Close()
	start := time.Now()
	_, evs, err := ladderTurn(t, &model.Ladder{Endpoints: []*model.Endpoint{modeEndpoint(srv, model.ModeChatCompletions, 500*time.Millisecond)}, Backoff: model.Backoff{Sleep: (&sleeps{}).sleep}})
	var ab *model.AbortError
	if !errors.As(err, &ab) || ab.Class != model.ClassCallTimeout || !strings.Contains(err.Error(), "agent.model_call_timeout") {
		t.Fatalf("%v", err)
	}
	if d := time.Since(start); d > 3*time.Second || len(srv.Requests()) != 1 {
		t.Fatalf("%d calls in %s", len(srv.Requests()), d)
	}
	if len(answers(evs)) != 0 {
		t.Fatal("an answer was recorded")
	}
}

func TestClassifyStreamErrors(t *testing.T) {
	wrap := func(err error) error {
		return &model.ProviderError{Provider: "p", Transport: true, Message: err.Error(), Err: err}
	}
	cases := map[error]model.ErrorClass{
		wrap(model.ErrStreamCut):                                model.ClassStreamCut,
		wrap(errors.Join(model.ErrStreamCut, context.Canceled)): model.ClassStreamCut,
		wrap(model.ErrMalformedStream):                          model.ClassMalformed,
		wrap(model.ErrCallTimeout):                              model.ClassCallTimeout,
		wrap(model.ErrStalled):                                  model.ClassTimeout,
		&model.ProviderError{Provider: "p", Transport: true, Message: "connection refused"}: model.ClassTimeout,
	}
	for err, want := range cases {
		if got := model.Classify(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

func TestWatchdog(t *testing.T) {
	// Touched often (every 10ms against a 250ms stall limit, a margin that
	// holds on a loaded machine), the call still ends at its deadline.
	ctx, wd := model.NewWatchdog(context.Background(), model.Timeouts{Stall: 250 * time.Millisecond, Total: 500 * time.Millisecond})
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for ctx.Err() == nil {
		<-tick.C
		wd.Touch()
	}
	wd.Stop()
	if !errors.Is(wd.Cause(), model.ErrCallTimeout) || !errors.Is(context.Cause(ctx), model.ErrCallTimeout) || wd.Stalled() || time.Since(start) < 490*time.Millisecond {
		t.Fatalf("cause %v after %s", wd.Cause(), time.Since(start))
	}
	// Left alone, it stalls first.
	ctx, wd = model.NewWatchdog(context.Background(), model.Timeouts{Stall: 30 * time.Millisecond, Total: time.Hour})
	<-ctx.Done()
	wd.Stop()
	if !wd.Stalled() || !errors.Is(wd.Cause(), model.ErrStalled) {
		t.Fatalf("cause %v", wd.Cause())
	}
	// Stopped, it never fires.
	ctx, wd = model.NewWatchdog(context.Background(), model.Timeouts{Stall: 10 * time.Millisecond, Total: 10 * time.Millisecond})
	wd.Stop()
	time.Sleep(30 * time.Millisecond)
	if wd.Cause() != nil || !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("cause %v", wd.Cause())
	}
}
