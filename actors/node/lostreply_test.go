package node_test

import (
	"context"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/schema"
)

// TestTurnAnsweredFromTheStore: a turn whose member never replies (here it
// is killed mid-turn, after its completion reached the store) is answered
// to its caller from the session's events within seconds, not held until
// the caller's timeout.
func TestTurnAnsweredFromTheStore(t *testing.T) {
	if isolate(t) {
		return
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.Route = func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "never sent", Delay: 10 * time.Minute}
	}
	t.Cleanup(llm.Close)
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	n := startNode(t, []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}, races)

	ctx := context.Background()
	c := newCaller(t, dsn, etcd.Endpoint, 1)
	store, sessions := c.store, c.sessions
	sid := uuid.NewString()
	if err := session.Create(ctx, store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	res := make(chan session.TurnResult, 1)
	go func() { res <- sessions.RunTurn(ctx, sid, &session.Turn{ID: "t-lost", Text: "a question"}) }()
	gatewaytest.WaitFor(t, "the turn at the model", func() bool { return len(llm.Requests()) == 1 })
	// The member's answer reaches the store, then the member goes before
	// its reply does.
	var envs []schema.Envelope
	for _, p := range []schema.Payload{schema.AssistantMessageAdded{Content: "answered before the member went", FinishReason: "stop"}, schema.TurnCompleted{Iterations: 1}} {
		e, err := schema.NewEnvelope(schema.Meta{SessionID: sid, TurnID: "t-lost"}, p)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	if _, err := store.Append(ctx, events.SessionStream(sid), events.Any, envs...); err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	select {
	case r := <-res:
		if r.Err != nil || r.Answer != "answered before the member went" {
			t.Fatalf("turn: %+v", r)
		}
		t.Logf("answered from the store %s after the member went", time.Since(began).Round(100*time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("the caller still waits 60 s after its member went, with the turn completed in the store")
	}
}

// TestFailedTurnAnsweredFromTheStore: a member that answers a turn with an
// error although the turn completed in the store (its last append
// committed, and then the connection broke before the server said so, as
// in a PostgreSQL crash) does not make the caller see a failure: the
// caller looks the turn up and answers it from the session's events.
func TestFailedTurnAnsweredFromTheStore(t *testing.T) {
	if isolate(t) {
		return
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	ctx := context.Background()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sid := uuid.NewString()
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		if lastUser(r) == "committed" {
			// The turn's completion reaches the store, then the member
			// hears an error.
			var envs []schema.Envelope
			for _, p := range []schema.Payload{schema.AssistantMessageAdded{Content: "committed before the error", FinishReason: "stop"}, schema.TurnCompleted{Iterations: 1}} {
				e, err := schema.NewEnvelope(schema.Meta{SessionID: sid, TurnID: "t-committed"}, p)
				if err != nil {
					t.Error(err)
				}
				envs = append(envs, e)
			}
			if _, err := store.Append(context.Background(), events.SessionStream(sid), events.Any, envs...); err != nil {
				t.Error(err)
			}
		}
		return &llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad request","type":"invalid_request_error"}}`}
	}
	t.Cleanup(llm.Close)
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	startNode(t, []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}, races)

	log := testLog()
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Leave(); sys.Shutdown() })
	gatewaytest.WaitFor(t, "the node in the client's topology", func() bool { return len(client.Members()) == 1 })
	sessions := node.NewSessions(client)
	sessions.Store = store
	if err := session.Create(ctx, store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	r := sessions.RunTurn(ctx, sid, &session.Turn{ID: "t-committed", Text: "committed"})
	if r.Err != nil || r.Answer != "committed before the error" {
		t.Fatalf("a turn completed in the store: %+v", r)
	}
	// A turn that did fail still fails, with the member's error. (In
	// another session: this one's actor saw its log move under it, which
	// in a store crash comes with its lease's loss, which restarts it.)
	other := uuid.NewString()
	if err := session.Create(ctx, store, other, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	r = sessions.RunTurn(ctx, other, &session.Turn{ID: "t-failed", Text: "failed"})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "bad request") {
		t.Fatalf("a failed turn: %+v", r)
	}
}

// TestTurnGoesOnWhenItsLeaseIsLost: the connection holding a session's
// store lease breaks mid-turn, while the model answers (as every
// connection does in a store restart). The turn is not cut: the answer
// the model gives is recorded and returned, the model is asked once, and
// the session stops on its member only then (session.Manager.LeaseLost).
func TestTurnGoesOnWhenItsLeaseIsLost(t *testing.T) {
	if isolate(t) {
		return
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	atModel := make(chan struct{}, 1)
	var calls atomic.Int32
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		if calls.Add(1) == 1 {
			atModel <- struct{}{}
			return &llmtest.Reply{Content: "cut short", Delay: 5 * time.Second}
		}
		return &llmtest.Reply{Content: "answer to " + lastUser(r)}
	}
	t.Cleanup(llm.Close)
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	startNode(t, []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}, races)

	ctx := context.Background()
	c := newCaller(t, dsn, etcd.Endpoint, 1)
	sid := uuid.NewString()
	if err := session.Create(ctx, c.store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	res := make(chan session.TurnResult, 1)
	go func() { res <- c.sessions.RunTurn(ctx, sid, &session.Turn{ID: "t-lease", Text: "a question"}) }()
	select {
	case <-atModel:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never reached the model")
	}
	k := uint64(postgres.LockKey("session:" + sid))
	if _, err := c.store.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)); err != nil {
		t.Fatal(err)
	}
	// The turn is not cut: the answer the model was giving when the lease
	// went is the turn's, and the model is not asked again for it.
	select {
	case r := <-res:
		if r.Err != nil || r.Answer != "cut short" {
			t.Fatalf("the turn whose lease was lost: %q, %v", r.Answer, r.Err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no answer 60 s after the lease was lost")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the model was asked %d times for the turn", n)
	}
	st, err := session.LookupTurn(ctx, c.store, sid, "t-lease")
	if err != nil || !st.Completed {
		t.Fatalf("the turn in the store: %+v, %v", st, err)
	}
}
