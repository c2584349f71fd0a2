package node

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

// streamReads is a store counting the reads of session streams (whole or
// one turn's).
type streamReads struct {
	events.Store
	mu sync.Mutex
	n  int
}

func (s *streamReads) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return s.Store.ReadStream(ctx, stream, dir, from, limit)
}

func (s *streamReads) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestNewTurnNotLookedUp: a member runs a turn its caller marks new (the
// caller created the session for it) without looking it up first: the
// session's start reads its stream once, where a turn looked up read it
// twice (a cluster turn of a new conversation: one PostgreSQL read less).
// A turn marked new in a session that holds a turn already (a caller
// asking again, or a request delivered late) is looked up all the same: a
// completed one is answered from its events, the model not asked again.
func TestNewTurnNotLookedUp(t *testing.T) {
	ctx := context.Background()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	llm := llmtest.New(llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"}, llmtest.Reply{Content: "three"})
	defer llm.Close()
	reads := &streamReads{Store: store}
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	defer sys.Shutdown()
	mgr := session.NewManager(sys, session.Deps{Store: reads, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 2, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 5})
	defer mgr.Shutdown()
	grainOf := func(id string) *grain {
		h := &hosted{mgr: mgr, active: map[string]int{}, letting: map[string]chan struct{}{}, refused: map[string]time.Time{}}
		return &grain{id: id, store: reads, mgr: mgr, log: log, poll: time.Second, turns: map[string]*turnRun{}, hosted: h}
	}
	create := func(id string) {
		t.Helper()
		if err := session.Create(ctx, store, id, session.Start{Source: "api", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		id    string
		new   bool
		reads int
	}{{"s-looked-up", false, 2}, {"s-new", true, 1}} {
		create(c.id)
		before := reads.count()
		rep := grainOf(c.id).run(ctx, request{Op: "turn", ID: "t-" + c.id, Text: "hi", New: c.new})
		if rep.Err != "" || rep.Answer == "" {
			t.Fatalf("%s: %+v", c.id, rep)
		}
		if n := reads.count() - before; n != c.reads {
			t.Fatalf("%s (new %v): the turn read session streams %d times; want %d", c.id, c.new, n, c.reads)
		}
	}

	// Marked new, in a session that holds it already completed: answered
	// from its events (in a session started afresh, and in one running).
	asked := len(llm.Requests())
	mgr.Restart("s-new")
	for _, what := range []string{"started afresh", "running"} {
		rep := grainOf("s-new").run(ctx, request{Op: "turn", ID: "t-s-new", Text: "hi", New: true})
		if rep.Err != "" || rep.Answer != "two" {
			t.Fatalf("a completed turn asked again as new, session %s: %+v; want its answer from the events", what, rep)
		}
	}
	// Marked new, a turn the session has not seen, in a session that holds
	// a turn: run (looked up first).
	if rep := grainOf("s-new").run(ctx, request{Op: "turn", ID: "t-other", Text: "more", New: true}); rep.Err != "" || rep.Answer != "three" {
		t.Fatalf("another turn marked new in a session with a turn: %+v", rep)
	}
	if n := len(llm.Requests()) - asked; n != 1 {
		t.Fatalf("the model was asked %d times after the first turns; want 1 (the new turn's)", n)
	}
}
