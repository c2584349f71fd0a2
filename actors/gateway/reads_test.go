package gateway_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// sessionReads is the gateway's store counting its reads of session
// streams.
type sessionReads struct {
	events.Store
	mu sync.Mutex
	n  int
}

func (s *sessionReads) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	if strings.HasPrefix(stream, events.SessionStream("")) {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
	}
	return s.Store.ReadStream(ctx, stream, dir, from, limit)
}

func (s *sessionReads) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestGatewayLazySessionNotLookedUp: with Config.CreateSession, the first
// turn of a session the chat just named creates it without reading its
// stream first (nothing can have written it), and the chat's later turns
// do not look for it again: a turn's path reads no session stream in the
// gateway. After a restart the chat's session is looked up once.
func TestGatewayLazySessionNotLookedUp(t *testing.T) {
	dir := t.TempDir()
	cfg := allowAll()
	var r *gwRig
	var created atomic.Int32
	cfg.CreateSession = func(ctx context.Context, platform, id string) error {
		created.Add(1)
		return session.Create(ctx, r.store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
	}
	reads := &sessionReads{}
	wrap := func(s events.Store) events.Store { reads.Store = s; return reads }
	r = newGwRigWrapped(t, dir, "", false, cfg, wrap, llmtest.Reply{Content: "One."}, llmtest.Reply{Content: "Two."}, llmtest.Reply{Content: "Three."})
	k := &talk{t: t, r: r}
	if got := k.say("5", "hello"); got != "One." {
		t.Fatalf("first turn: %q", got)
	}
	if got := k.say("5", "again"); got != "Two." {
		t.Fatalf("second turn: %q", got)
	}
	if n := reads.count(); n != 0 || created.Load() != 1 {
		t.Fatalf("two turns of a new chat read session streams %d times and created %d sessions; want 0 and 1", n, created.Load())
	}
	r.stop()

	reads2 := &sessionReads{}
	wrap2 := func(s events.Store) events.Store { reads2.Store = s; return reads2 }
	r = newGwRigWrapped(t, dir, "", false, cfg, wrap2, llmtest.Reply{Content: "Three."})
	k = &talk{t: t, r: r}
	if got := k.say("5", "after the restart"); got != "Three." {
		t.Fatalf("turn after the restart: %q", got)
	}
	if n := reads2.count(); n != 1 || created.Load() != 1 {
		t.Fatalf("after a restart the chat's session was read %d times and %d sessions created; want 1 read, no new session", n, created.Load())
	}
}

// TestGatewayUsageFromTheTurnResult: the usage a front door's reply
// carries comes with the turn's result (the session made every call of
// the turn and summed them), not from a read of the session's stream
// after the turn — in a cluster, one PostgreSQL read a turn. It is the sum
// the events record.
func TestGatewayUsageFromTheTurnResult(t *testing.T) {
	cfg := allowAll()
	var r *gwRig
	cfg.CreateSession = func(ctx context.Context, platform, id string) error {
		return session.Create(ctx, r.store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
	}
	reads := &sessionReads{}
	wrap := func(s events.Store) events.Store { reads.Store = s; return reads }
	r = newGwRigWrapped(t, t.TempDir(), "", false, cfg, wrap,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "missing", Args: "{}"}}, Prompt: 100, Completion: 7},
		llmtest.Reply{Content: "Done.", Prompt: 120, Completion: 3})
	in := dm("5", "m1", "use a tool")
	in.Verified = true
	r.plat.send(t, in)
	got := r.plat.waitReplies(t, 1)[0]
	if got.Text != "Done." {
		t.Fatalf("reply %+v", got)
	}
	if n := reads.count(); n != 0 {
		t.Fatalf("a front door's turn read session streams %d times in the gateway; want 0 (the usage comes with the result)", n)
	}
	if got.Usage == nil {
		t.Fatal("the reply carries no usage")
	}
	st, err := session.LookupTurn(context.Background(), r.store, got.SessionID, gateway.TurnIDFor("testchat", "m1"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (schema.Usage{PromptTokens: 220, CompletionTokens: 10}); *got.Usage != want || st.Usage != want {
		t.Fatalf("usage: reply %+v, events %+v; want %+v", *got.Usage, st.Usage, want)
	}
}
