package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
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

// TestClusterSessionsPassivate: on an agent node (its own process), the
// grains of sessions that went idle stop, and their sessions' locks are
// released (another process can take them) and the node's open files are
// what they were before; the next message wakes a session from its events
// on the node, and the model sees its history.
func TestClusterSessionsPassivate(t *testing.T) {
	if isolate(t) {
		return
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "answer to " + lastUser(r)} }
	t.Cleanup(llm.Close)
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL, "HERMES_NODE_IDLE=300ms"}
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	p := startNode(t, env, races)

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
	gatewaytest.WaitFor(t, "the node in the client's topology", func() bool { return len(client.Members()) == 1 })
	sessions := node.NewSessions(client)

	// Two waves of n new sessions, touched at once with one message
	// each: the first fills the node's pools (model and store
	// connections, which follow concurrency), the second shows its open
	// files do not grow with the sessions it has seen.
	const n = 20
	ids := make([]string, 2*n)
	for i := range ids {
		ids[i] = uuid.NewString()
		if err := session.Create(ctx, store, ids[i], session.Start{Source: "api", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			t.Fatal(err)
		}
	}
	deactivated := map[string]bool{}
	wave := func(ids []string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := sessions.RunTurn(ctx, id, &session.Turn{ID: "t-" + id, Text: "message " + id})
				if r.Err != nil || r.Answer != "answer to message "+id {
					t.Errorf("session %s: %+v", id, r)
				}
			}()
		}
		wg.Wait()
		deadline := time.After(60 * time.Second)
		for {
			all := true
			for _, id := range ids {
				all = all && deactivated[id]
			}
			if all {
				return
			}
			select {
			case l := <-p.lines:
				if id, ok := strings.CutPrefix(l, "deactivated "); ok {
					deactivated[id] = true
				}
			case <-deadline:
				t.Fatalf("grains not deactivated within 60 s: %d of %d", len(deactivated), len(ids))
			}
		}
	}
	wave(ids[:n])
	before := fdsOf(t, p.cmd.Process.Pid)
	wave(ids[n:])
	// The sessions' locks were released: another process takes them.
	locks := store.Locks(session.OwnerRecord(session.ThisProcess()))
	for _, id := range ids {
		var lk *postgres.Lock
		deadline := time.Now().Add(30 * time.Second)
		for lk, err = locks.TryLock(ctx, "session:"+id); err != nil; lk, err = locks.TryLock(ctx, "session:"+id) {
			if time.Now().After(deadline) {
				t.Fatalf("session %s still locked after its grain stopped: %v", id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after := fdsOf(t, p.cmd.Process.Pid); after > before+4 {
		out, _ := exec.Command("ls", "-l", fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)).CombinedOutput()
		t.Logf("%s", out)
		t.Fatalf("the node's open files: %d after %d sessions, %d after %d more went idle", before, n, after, n)
	}

	// The next message wakes a session with its history.
	r := sessions.RunTurn(ctx, ids[3], &session.Turn{ID: "again", Text: "and now?"})
	if r.Err != nil || r.Answer != "answer to and now?" {
		t.Fatalf("%+v", r)
	}
	reqs := llm.Requests()
	last := reqs[len(reqs)-1].Body["messages"].([]any)
	var got []string
	for _, m := range last {
		mm := m.(map[string]any)
		c, _ := mm["content"].(string)
		got = append(got, c)
	}
	if want := "You are Hermes.|message " + ids[3] + "|answer to message " + ids[3] + "|and now?"; strings.Join(got, "|") != want {
		t.Fatalf("the woken session sent %q, want %q", got, want)
	}
}

// fdsOf counts the open files of process pid.
func fdsOf(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	return len(es)
}
