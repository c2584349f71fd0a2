package review

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// script is a model.Provider answering from a list; past its end it
// repeats the last answer. block, when set, holds every call until ctx
// ends.
type script struct {
	mu    sync.Mutex
	resps []model.Response
	reqs  []model.Request
	block bool
}

func (s *script) Name() string    { return "fake" }
func (s *script) APIMode() string { return model.ModeChatCompletions }
func (s *script) Complete(ctx context.Context, req model.Request, _ func(model.Delta)) (model.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	r := s.resps[min(len(s.reqs), len(s.resps))-1]
	s.mu.Unlock()
	if s.block {
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	}
	return r, nil
}

func (s *script) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// fakeTool records the env and arguments of its calls.
type fakeTool struct {
	name   string
	answer string
	mu     sync.Mutex
	envs   []tool.Env
}

func (f *fakeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: f.name, Parameters: map[string]any{"type": "object"}}
}
func (f *fakeTool) Flags() tool.Flags { return tool.Flags{} }
func (f *fakeTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	f.mu.Lock()
	f.envs = append(f.envs, *tool.EnvFrom(ctx))
	f.mu.Unlock()
	return f.answer, nil
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

func openStore(t *testing.T) events.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func request(id string) session.ReviewRequest {
	return session.ReviewRequest{ID: id, SessionID: "parent-1", TurnID: "turn-1", Skills: true, Memory: true, System: "You are Hermes.",
		Messages: []schema.Message{{Role: "user", Content: "I prefer terse answers; deploy it"}, {Role: "assistant", Content: "Deployed."}}}
}

// finished waits for review id's ReviewFinished on the reviews stream.
func finished(t *testing.T, store events.Store, id string) schema.ReviewFinished {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		all, err := List(context.Background(), store)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			if e.ReviewID == id && e.Finished != nil {
				return *e.Finished
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("review %s did not finish", id)
	return schema.ReviewFinished{}
}

// A review reads the conversation, is offered the memory and skill tools
// alone, runs them as the review of the parent's turn, and records what
// it changed, its cost and its note.
func TestReviewRecordsWhatItChanged(t *testing.T) {
	store := openStore(t)
	mem := &fakeTool{name: "memory", answer: "saved"}
	manage := &fakeTool{name: "skill_manage", answer: "created"}
	term := &fakeTool{name: "terminal", answer: "ran"}
	prov := &script{resps: []model.Response{
		{ToolCalls: []schema.ToolCall{call("c1", "memory", `{"action":"add","target":"user","content":"Prefers terse answers."}`),
			call("c2", "skill_manage", `{"action":"create","name":"deploy-check","content":"x"}`)}, Usage: schema.Usage{PromptTokens: 1000, CompletionTokens: 10}},
		{Content: "Saved a preference and a skill.", Usage: schema.Usage{PromptTokens: 1100, CompletionTokens: 10}},
	}}
	var notes []Finished
	var mu sync.Mutex
	r := New(Config{Store: store, Log: zerolog.Nop(), Provider: prov, Model: "aux", Tools: tool.NewTools(mem, manage, term),
		Prices: model.Prices{"aux": {Input: 1, Output: 1}},
		Notify: func(f Finished) { mu.Lock(); notes = append(notes, f); mu.Unlock() }})
	r.Start(request("rev-1"))
	fin := finished(t, store, "rev-1")
	r.Close(time.Second)
	if fin.Status != schema.ReviewCompleted || len(fin.Changes) != 2 || fin.Usage.PromptTokens != 2100 || fin.CostUSD <= 0 {
		t.Fatalf("finished %+v", fin)
	}
	if want := "learned: created skill deploy-check; 1 memory entry updated (undo: hermes review undo rev-1)"; fin.Note != want {
		t.Fatalf("note %q, want %q", fin.Note, want)
	}
	if len(notes) != 1 || notes[0].SessionID != "parent-1" || notes[0].Note != fin.Note {
		t.Fatalf("notified %+v", notes)
	}
	for _, spec := range prov.reqs[0].Tools {
		if spec.Name == "terminal" {
			t.Fatal("the review was offered terminal")
		}
	}
	if !strings.Contains(prov.reqs[0].System, "background review") || prov.reqs[0].Messages[0].Content != "I prefer terse answers; deploy it" {
		t.Fatalf("the review's request: %q %+v", prov.reqs[0].System, prov.reqs[0].Messages)
	}
	if e := manage.envs[0]; e.SessionID != "rev-1" || e.ReviewOf != "parent-1" || e.ReviewOfTurn != "turn-1" {
		t.Fatalf("skill_manage ran in %+v", e)
	}
	rs, _ := store.ReadStream(context.Background(), events.SessionStream("rev-1"), events.Forward, 0, 0)
	p, _ := schema.Decode(rs[0].Envelope)
	if st := p.(schema.SessionStarted); st.Reason != schema.StartReview || st.ParentSessionID != "parent-1" || st.ParentTurnID != "turn-1" {
		t.Fatalf("started %+v", st)
	}
	if rs[len(rs)-1].Type != schema.TypeSessionEnded {
		t.Fatalf("the review's session ends with %s", rs[len(rs)-1].Type)
	}
}

// The cost cap stops a review before the call that would go over it; the
// step budget stops one that keeps calling tools.
func TestReviewBudgets(t *testing.T) {
	loop := []model.Response{{ToolCalls: []schema.ToolCall{call("c", "memory", `{"action":"add","target":"memory","content":"x"}`)},
		Usage: schema.Usage{PromptTokens: 1000000}}}
	for _, tc := range []struct {
		name      string
		cfg       Config
		maxCalls  int
		wantError string
	}{
		{"cost", Config{MaxCost: 0.5, MaxSteps: 50}, 1, "cost cap"},
		{"steps", Config{MaxSteps: 3}, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			prov := &script{resps: loop}
			cfg := tc.cfg
			cfg.Store, cfg.Log, cfg.Provider, cfg.Model = store, zerolog.Nop(), prov, "aux"
			cfg.Prices = model.Prices{"aux": {Input: 1}}
			cfg.Tools = tool.NewTools(&fakeTool{name: "memory", answer: "saved"})
			r := New(cfg)
			r.Start(request("rev-" + tc.name))
			fin := finished(t, store, "rev-"+tc.name)
			r.Close(time.Second)
			if fin.Status != schema.ReviewBudget || !strings.Contains(fin.Error, tc.wantError) {
				t.Fatalf("finished %+v", fin)
			}
			// A step past the budget is the no-tools grace call.
			if n := prov.calls(); n > tc.maxCalls+1 {
				t.Fatalf("%d model calls", n)
			}
		})
	}
}

// Close lets a review run for its wait, then stops it: it is recorded as
// abandoned, and a review asked for after Close is not started.
func TestCloseAbandonsAReviewThatRunsOn(t *testing.T) {
	store := openStore(t)
	prov := &script{resps: []model.Response{{Content: "never"}}, block: true}
	r := New(Config{Store: store, Log: zerolog.Nop(), Provider: prov, Model: "aux", Tools: tool.NewTools()})
	r.Start(request("rev-slow"))
	for prov.calls() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.Close(20 * time.Millisecond)
	if fin := finished(t, store, "rev-slow"); fin.Status != schema.ReviewAbandoned || !strings.Contains(fin.Error, "hermes stopped") {
		t.Fatalf("finished %+v", fin)
	}
	r.Start(request("rev-late"))
	if all, _ := List(context.Background(), store); len(all) != 1 {
		t.Fatalf("a review started after Close: %d", len(all))
	}
}

// leases refuses the reviews in busy, as a live process's leases do.
type leases struct{ busy map[string]bool }

type lease struct{}

func (lease) Previous() *session.Owner { return nil }
func (lease) Release() error           { return nil }

func (l leases) Lease(id string) (session.Lease, error) {
	if l.busy[id] {
		return nil, &session.InUseError{Session: id}
	}
	return lease{}, nil
}

// Recover closes, as abandoned, a review whose process is gone (its open
// turn and dangling call closed, what it had changed kept for undo), and
// leaves alone one another live process runs.
func TestRecoverAbandonsOrphansOnly(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	for _, id := range []string{"rev-dead", "rev-live"} {
		if err := appendTo(ctx, store, Stream, schema.Meta{}, schema.ReviewStarted{ReviewID: id, SessionID: "parent-1"}); err != nil {
			t.Fatal(err)
		}
	}
	// The dead one got as far as a memory call that answered, and a
	// skill_manage call that did not.
	var envs []schema.Envelope
	for _, p := range []schema.Payload{
		schema.SessionStarted{Reason: schema.StartReview, ParentSessionID: "parent-1"},
		schema.UserMessageAdded{Content: "review"},
		schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{call("c1", "memory", `{"action":"add","target":"user","content":"Likes Go."}`), call("c2", "skill_manage", `{"action":"create","name":"x"}`)}},
		schema.ToolCallStarted{CallID: "c1", Name: "memory", Arguments: `{"action":"add","target":"user","content":"Likes Go."}`},
		schema.ToolCallStarted{CallID: "c2", Name: "skill_manage", Arguments: `{"action":"create","name":"x"}`},
		schema.ToolResultAdded{CallID: "c1", Name: "memory", Content: "saved"},
	} {
		e, _ := schema.NewEnvelope(schema.Meta{SessionID: "rev-dead", TurnID: "t1"}, p)
		envs = append(envs, e)
	}
	if _, err := store.Append(ctx, events.SessionStream("rev-dead"), events.NoStream, envs...); err != nil {
		t.Fatal(err)
	}
	r := New(Config{Store: store, Log: zerolog.Nop(), Provider: &script{}, Tools: tool.NewTools(), Leases: leases{busy: map[string]bool{"rev-live": true}}})
	closed, err := r.Recover(ctx)
	if err != nil || len(closed) != 1 || closed[0] != "rev-dead" {
		t.Fatalf("closed %v, %v", closed, err)
	}
	all, _ := List(ctx, store)
	for _, e := range all {
		switch e.ReviewID {
		case "rev-live":
			if e.Finished != nil {
				t.Fatal("a live review was closed")
			}
		case "rev-dead":
			if e.Finished == nil || e.Finished.Status != schema.ReviewAbandoned || len(e.Finished.Changes) != 1 || e.Finished.Changes[0].Content != "Likes Go." {
				t.Fatalf("dead review finished %+v", e.Finished)
			}
		}
	}
	rs, _ := store.ReadStream(ctx, events.SessionStream("rev-dead"), events.Forward, 0, 0)
	var tail []string
	for _, r := range rs[len(rs)-3:] {
		tail = append(tail, r.Type)
	}
	if strings.Join(tail, ",") != "ToolResultAdded,TurnInterrupted,SessionEnded" {
		t.Fatalf("the dead review's session ends %v", tail)
	}
	// Recovering again changes nothing.
	if closed, err := r.Recover(ctx); err != nil || len(closed) != 0 {
		t.Fatalf("second recover closed %v, %v", closed, err)
	}
}

func TestNote(t *testing.T) {
	for _, tc := range []struct {
		f    schema.ReviewFinished
		want string
	}{
		{schema.ReviewFinished{ReviewID: "0123456789", Status: schema.ReviewCompleted}, "nothing new to learn from this turn"},
		{schema.ReviewFinished{ReviewID: "0123456789", Status: schema.ReviewFailed}, "the background review ended failed without learning anything"},
		{schema.ReviewFinished{ReviewID: "0123456789", Status: schema.ReviewCompleted, Changes: []schema.ReviewChange{{Kind: schema.ReviewChangeSkill, Action: "patch", Name: "a"},
			{Kind: schema.ReviewChangeMemory, Action: "add", Staged: "m-1"}, {Kind: schema.ReviewChangeMemory, Action: "add", Staged: "m-2"}}},
			"learned: patched skill a; 2 memory changes awaiting /memory approval (undo: hermes review undo 01234567)"},
		{schema.ReviewFinished{ReviewID: "r", Status: schema.ReviewBudget, Changes: []schema.ReviewChange{{Kind: schema.ReviewChangeMemory, Action: "add"}}},
			"budget_exhausted, learned: 1 memory entry updated (undo: hermes review undo r)"},
	} {
		if got := Note(tc.f); got != tc.want {
			t.Errorf("Note = %q, want %q", got, tc.want)
		}
	}
}
