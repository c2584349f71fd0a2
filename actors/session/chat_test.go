package session_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// payloads decodes a session's events.
func payloads(t *testing.T, s events.Store, id string) []schema.Payload {
	t.Helper()
	rs, err := s.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.Payload
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func titles(ps []schema.Payload) []string {
	var out []string
	for _, p := range ps {
		if t, ok := p.(schema.SessionTitled); ok {
			out = append(out, t.Title)
		}
	}
	return out
}

// A new session is titled after its first exchange that answered, once,
// with the title call recorded for costs; a failed turn asks nothing; a
// title the person set while the generated one was on its way wins.
func TestGeneratedTitles(t *testing.T) {
	r := newRig(t)
	r.srv.SetDefault(llmtest.Reply{Content: "an answer"})
	var asked atomic.Int32
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	sys := actors.NewSystem(zerolog.Nop())
	deps := session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "m"}, MaxTurns: 5,
		Title: func(ctx context.Context, _, user, answer string) (string, schema.AuxiliaryCallCompleted, error) {
			n := asked.Add(1)
			mu.Lock()
			seen = append(seen, user+" => "+answer)
			mu.Unlock()
			if strings.Contains(user, "slow") {
				<-release
			}
			return "Title " + string(rune('0'+n)), schema.AuxiliaryCallCompleted{Purpose: "title_generation", Model: "aux", Usage: schema.Usage{PromptTokens: 40}}, nil
		}}
	mgr := session.NewManager(sys, deps)
	defer sys.Shutdown()
	defer mgr.Shutdown()
	ctx := context.Background()

	r.create(t, "a")
	if res := mgr.Run(ctx, "a", "plan a trip", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	waitFor(t, func() bool { return len(titles(payloads(t, r.store, "a"))) == 1 })
	mgr.Run(ctx, "a", "and then?", nil)
	time.Sleep(50 * time.Millisecond)
	ps := payloads(t, r.store, "a")
	if got := titles(ps); len(got) != 1 || got[0] != "Title 1" || asked.Load() != 1 {
		t.Fatalf("titles %v after %d asks", got, asked.Load())
	}
	if seen[0] != "plan a trip => an answer" {
		t.Fatalf("the title was asked for %q", seen[0])
	}
	aux := 0
	for _, p := range ps {
		if a, ok := p.(schema.AuxiliaryCallCompleted); ok && a.Purpose == "title_generation" && a.Usage.PromptTokens == 40 {
			aux++
		}
	}
	if aux != 1 {
		t.Fatalf("title calls recorded: %d", aux)
	}

	// The person's title, set while the generated one is on its way, wins;
	// the call is still recorded.
	r.create(t, "b")
	if res := mgr.Run(ctx, "b", "slow one", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	waitFor(t, func() bool { return asked.Load() == 2 })
	if err := mgr.Retitle(ctx, "b", "Mine"); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, func() bool {
		for _, p := range payloads(t, r.store, "b") {
			if _, ok := p.(schema.AuxiliaryCallCompleted); ok {
				return true
			}
		}
		return false
	})
	if got := titles(payloads(t, r.store, "b")); len(got) != 1 || got[0] != "Mine" {
		t.Fatalf("titles of b %v", got)
	}

	// A turn that failed asks for no title.
	r.srv.SetDefault(llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad request"}}`})
	r.create(t, "c")
	if res := mgr.Run(ctx, "c", "fails", nil); res.Err == nil {
		t.Fatal("the turn did not fail")
	}
	time.Sleep(50 * time.Millisecond)
	if asked.Load() != 2 {
		t.Fatalf("%d title asks", asked.Load())
	}
}

// What a subagent does reaches the delegating turn's observer one level
// deeper, and a turn's Yolo holds for its subagents.
func TestSubagentObservationsAndYolo(t *testing.T) {
	route := func(r llmtest.Request) *llmtest.Reply {
		role, _, _ := lastMsg(r)
		switch goal := firstUser(r); {
		case goal == "top" && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"child: work"}`}}}
		case strings.HasPrefix(goal, "child") && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "side_effect", Args: `{}`}}}
		default:
			return finals(r, "done")
		}
	}
	var runs, running, peak atomic.Int32
	yolo := make(chan bool, 4)
	se := sideEffect{runs: &runs, running: &running, peak: &peak, yolo: yolo}
	r := newTreeRig(t, route, se, nil)
	defer r.close()
	var mu sync.Mutex
	var obs []agent.Observation
	res := r.mgr.RunTurn(context.Background(), "parent", &session.Turn{Text: "top", Yolo: true, Observe: func(o agent.Observation) {
		if o.Kind == "tool_start" || o.Kind == "tool_end" {
			mu.Lock()
			obs = append(obs, o)
			mu.Unlock()
		}
	}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, o := range obs {
		got = append(got, o.Kind+":"+o.Tool+":"+string(rune('0'+o.Depth)))
		if o.ID == "" {
			t.Fatalf("observation without the call's id: %+v", o)
		}
	}
	if strings.Join(got, " ") != "tool_start:delegate_task:0 tool_start:side_effect:1 tool_end:side_effect:1 tool_end:delegate_task:0" {
		t.Fatalf("observations %v", got)
	}
	if !<-yolo {
		t.Fatal("the subagent's tool did not run with the turn's yolo")
	}
}

// /compress --force compresses a history its protections cover whole.
func TestForcedCompression(t *testing.T) {
	r := newRig(t)
	r.srv.SetDefault(llmtest.Reply{Content: "fine"})
	r.create(t, "s")
	ctx := context.Background()
	for _, q := range []string{"one", "two", "three"} {
		if res := r.mgr.Run(ctx, "s", q, nil); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if _, err := r.mgr.Compress(ctx, "s", ""); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("plain /compress of a short history: %v", err)
	}
	next, err := r.mgr.CompressNow(ctx, "s", session.CompressNow{Force: true})
	if err != nil || next == "s" || next == "" {
		t.Fatalf("forced: %q %v", next, err)
	}
	var started schema.SessionStarted
	for _, p := range payloads(t, r.store, next) {
		if s, ok := p.(schema.SessionStarted); ok {
			started = s
		}
	}
	if started.Reason != schema.StartCompression || len(started.History) >= 6 {
		t.Fatalf("compressed history: %+v", started)
	}
	if last := started.History[len(started.History)-2]; last.Role != "user" || last.Content != "three" {
		t.Fatalf("the last exchange was not kept: %+v", started.History)
	}
}

// A turn's Persona reaches the model with the latest user message on
// every call, and is never recorded: the next turn without it sends none.
func TestPersonaIsSentNotRecorded(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "Arr, hello."}, llmtest.Reply{Content: "Hello."})
	r.create(t, "s")
	persona := "You speak like a ship's captain."
	if res := r.mgr.RunTurn(context.Background(), "s", &session.Turn{Text: "hi", Persona: persona}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := r.mgr.RunTurn(context.Background(), "s", &session.Turn{Text: "hi again"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	_, first, _ := lastMsg(reqs[0])
	_, second, _ := lastMsg(reqs[1])
	if !strings.Contains(first, persona) || !strings.HasPrefix(first, "hi") || strings.Contains(second, persona) {
		t.Fatalf("the persona was not sent with the first turn alone:\n%q\n%q", first, second)
	}
	for _, p := range payloads(t, r.store, "s") {
		if u, ok := p.(schema.UserMessageAdded); ok && strings.Contains(u.Content, persona) {
			t.Fatalf("the persona was recorded: %q", u.Content)
		}
	}
}
