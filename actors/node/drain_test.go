package node_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
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
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// TestClusterDrain: SIGTERM to a node in the middle of a turn lets the turn
// finish there (its model call is made once, the caller gets its answer
// from that node), starts no new turn there (one asked for meanwhile is run
// by the other node once the first has left, its model asked once too), and
// then the node leaves and exits.
func TestClusterDrain(t *testing.T) {
	if isolate(t) {
		return
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		text := lastUser(r)
		if strings.HasPrefix(text, "slow") {
			return &llmtest.Reply{Content: "done: " + text, Delay: 4 * time.Second}
		}
		return &llmtest.Reply{Content: "done: " + text}
	}
	t.Cleanup(llm.Close)
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}
	a := startNode(t, env, races)
	b := startNode(t, env, races)

	ctx := context.Background()
	log := testLog()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Leave(); sys.Shutdown() })
	gatewaytest.WaitFor(t, "both nodes in the client's topology", func() bool { return len(client.Members()) == 2 })
	sessions := node.NewSessions(client)
	got := &answers{by: map[string][]string{}}
	sessions.OnAnswer = got.add

	// Sessions placed on node a, found by a first turn each.
	var onA []string
	for i := 0; len(onA) < 2 && i < 40; i++ {
		sid := uuid.NewString()
		if err := session.Create(ctx, store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			t.Fatal(err)
		}
		if r := sessions.RunTurn(ctx, sid, &session.Turn{ID: "warm", Text: "hello " + sid}); r.Err != nil {
			t.Fatal(r.Err)
		}
		if by := got.of(sid); len(by) == 1 && by[0] == a.addr {
			onA = append(onA, sid)
		}
	}
	if len(onA) < 2 {
		t.Fatal("no two sessions were placed on the first node")
	}
	slow := make(chan session.TurnResult, 1)
	go func() { slow <- sessions.RunTurn(ctx, onA[0], &session.Turn{ID: "t-slow", Text: "slow one"}) }()
	gatewaytest.WaitFor(t, "the slow turn at the model", func() bool { return countUser(llm, "slow one") == 1 })
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // node a is draining now
	fast := make(chan session.TurnResult, 1)
	go func() { fast <- sessions.RunTurn(ctx, onA[1], &session.Turn{ID: "t-fast", Text: "fast one"}) }()

	for name, ch := range map[string]chan session.TurnResult{"slow": slow, "fast": fast} {
		select {
		case r := <-ch:
			if r.Err != nil || r.Answer != fmt.Sprintf("done: %s one", name) {
				t.Fatalf("%s turn: %+v", name, r)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the %s turn never ended", name)
		}
	}
	if by := got.of(onA[0]); by[len(by)-1] != a.addr {
		t.Fatalf("the slow turn was answered by %v, want the draining node %s", by, a.addr)
	}
	if by := got.of(onA[1]); by[len(by)-1] != b.addr {
		t.Fatalf("the turn asked for during the drain was answered by %v, want the other node %s", by, b.addr)
	}
	if n := countUser(llm, "slow one"); n != 1 {
		t.Fatalf("the slow turn's model call was made %d times", n)
	}
	if n := countUser(llm, "fast one"); n != 1 {
		t.Fatalf("the turn asked for during the drain reached the model %d times", n)
	}
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	select {
	case err := <-exited:
		// 66 is the race detector's exit status: the races it found
		// inside protoactor-go are counted by checkRaces, ours fail it.
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 66) {
			t.Fatalf("the drained node exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drained node did not exit")
	}
}
