package session_test

import (
	"context"
	"errors"
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
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// TestStoreLeases: two processes' managers over one PostgreSQL store. The
// second is refused the session the first runs, naming the first; when
// the connection holding the first one's lease breaks, the first stops
// the session (it no longer holds it) and the second takes it over,
// learning who left it; the first is then refused in turn.
func TestStoreLeases(t *testing.T) {
	ctx := context.Background()
	store := storeWithSession(t, "s1")
	llm := llmtest.New()
	llm.Route = func(llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "hi"} }
	defer llm.Close()
	newMgr := func(o session.Owner) (*session.Manager, *postgres.Locks) {
		sys := actors.NewSystem(zerolog.Nop())
		locks := store.Locks(session.OwnerRecord(o))
		leases := &session.StoreLeases[*postgres.Lock]{Locks: locks}
		m := session.NewManager(sys, session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
			Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 5, Leases: leases})
		leases.OnLost = m.LeaseLost
		t.Cleanup(func() {
			m.Shutdown()
			sys.Shutdown()
			locks.Close()
		})
		return m, locks
	}
	one, _ := newMgr(session.Owner{Host: "node-1", PID: 1, Nonce: "a"})
	two, _ := newMgr(session.Owner{Host: "node-2", PID: 2, Nonce: "b"})
	if res := one.Run(ctx, "s1", "hello", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	var inUse *session.InUseError
	if _, err := two.Session(ctx, "s1"); !errors.As(err, &inUse) || inUse.Owner.Host != "node-1" || inUse.Owner.PID != 1 {
		t.Fatalf("the second manager: %v", err)
	}

	// The first one's lock connection breaks.
	k := uint64(postgres.LockKey("session:s1"))
	if _, err := store.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := two.Run(ctx, "s1", "again", nil)
		if res.Err == nil {
			break
		}
		if !errors.As(res.Err, &inUse) || time.Now().After(deadline) {
			t.Fatalf("the second manager after the first lost its lease: %v", res.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first one stops the session when it hears its lease is lost
	// (its watcher pings each second): asked to run it then, it is
	// refused. Before that its appends are refused by the stream's
	// revision, so it never writes beside the second.
	var wrong *events.WrongExpectedVersionError
	for {
		res := one.Run(ctx, "s1", "me too", nil)
		if errors.As(res.Err, &inUse) && inUse.Owner.Host == "node-2" {
			break
		}
		if !errors.As(res.Err, &wrong) || time.Now().After(deadline) {
			t.Fatalf("the first manager after losing its lease: %+v", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs, err := store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, r := range rs {
		if r.Type == "UserMessageAdded" {
			users++
		}
	}
	if users != 2 {
		t.Fatalf("%d user messages recorded, want hello and again", users)
	}
}

// TestLeaseLostMidTurn: the connection holding a session's lease breaks
// while its turn waits for the model (as in a PostgreSQL restart). The
// turn is not cut: the answer the model gives is recorded and returned,
// the model is asked once, and only then does the session stop; its next
// turn leases it again.
func TestLeaseLostMidTurn(t *testing.T) {
	ctx := context.Background()
	store := storeWithSession(t, "s1")
	asked := make(chan struct{}, 8)
	release := make(chan struct{})
	llm := llmtest.New()
	llm.Route = func(llmtest.Request) *llmtest.Reply {
		asked <- struct{}{}
		<-release
		return &llmtest.Reply{Content: "hi"}
	}
	defer llm.Close()
	answer := sync.OnceFunc(func() { close(release) })
	defer answer() // before the server closes: a failed test leaves no request hanging
	sys := actors.NewSystem(zerolog.Nop())
	locks := store.Locks(session.OwnerRecord(session.Owner{Host: "node-1", PID: 1, Nonce: "a"}))
	leases := &session.StoreLeases[*postgres.Lock]{Locks: locks}
	m := session.NewManager(sys, session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 5, Leases: leases})
	lost := make(chan struct{})
	stopped := make(chan struct{})
	leases.OnLost = func(id string) {
		close(lost)
		m.LeaseLost(id)
		close(stopped)
	}
	defer func() {
		m.Shutdown()
		sys.Shutdown()
		locks.Close()
	}()
	done := make(chan session.TurnResult, 1)
	go func() { done <- m.Run(ctx, "s1", "hello", nil) }()
	<-asked
	k := uint64(postgres.LockKey("session:s1"))
	if _, err := store.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(30 * time.Second):
		t.Fatal("the broken lock connection was not noticed")
	}
	select {
	case <-stopped:
		t.Fatal("the session stopped with its turn waiting for the model")
	case <-time.After(200 * time.Millisecond):
	}
	answer()
	res := <-done
	if res.Err != nil || res.Answer != "hi" {
		t.Fatalf("the turn under a lost lease: %+v", res)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not stop after its turn")
	}
	if n := len(asked); n != 0 {
		t.Fatalf("the model was asked %d more times", n)
	}
	rs, err := store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Type == "TurnInterrupted" {
			t.Fatalf("the turn was interrupted: %s", r.Payload)
		}
	}
	// The next turn leases the session again.
	if res := m.Run(ctx, "s1", "again", nil); res.Err != nil || res.Answer != "hi" {
		t.Fatalf("the next turn: %+v", res)
	}
}

// storeWithSession opens a PostgreSQL store on a database of its own,
// closed with the test, holding the new session id.
func storeWithSession(t *testing.T, id string) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	store, err := postgres.Open(ctx, pgtest.Start(t).Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := session.Create(ctx, store, id, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	return store
}
