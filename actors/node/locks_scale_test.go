package node_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// TestNodeLocksStayBounded: an agent node touches many sessions, one
// message each, 32 at a time, on PostgreSQL as the tests run it (the
// default max_locks_per_transaction: room for 64 × 200 connections =
// 12,800 advisory locks). Sessions that went idle passivate and release
// their lock, so the advisory locks held at once stay at the sessions
// active in the idle period however many sessions the node has seen, and
// its open files do not grow with them. HERMES_NODE_SESSIONS sets how many (default
// 1,500; the figure is 20,000, past what the lock table holds).
func TestNodeLocksStayBounded(t *testing.T) {
	if isolate(t) {
		return
	}
	n := 1500
	if v := os.Getenv("HERMES_NODE_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("HERMES_NODE_SESSIONS=%q: a count of sessions", v)
		}
	}
	const conc = 32
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.NoRecord = true
	llm.Route = func(r llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "answer to " + lastUser(r)} }
	t.Cleanup(llm.Close)
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL, "HERMES_NODE_IDLE=200ms"}
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	p := startNode(t, env, races)

	ctx := context.Background()
	c := newCaller(t, dsn, etcd.Endpoint, 1)
	store := c.store
	sessions := node.NewSessions(c.client) // as before: no answers from the store

	watch, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close(context.Background()) })
	held := func() int64 {
		var c int64
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted`).Scan(&c); err != nil {
			t.Errorf("pg_locks: %v", err)
		}
		return c
	}
	base := held()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if c := held(); c > peak.Load() {
				peak.Store(c)
			}
		}
	}()

	ids := make(chan string)
	var answered atomic.Int64
	var wg sync.WaitGroup
	var warmFDs, warmRSS int
	warm := min(200, n)
	var warmOnce sync.Once
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for id := range ids {
				if err := session.Create(ctx, store, id, session.Start{Source: "api", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
					t.Errorf("create %s: %v", id, err)
					continue
				}
				r := sessions.RunTurn(ctx, id, &session.Turn{ID: "t-" + id, Text: "message " + id})
				if r.Err != nil || r.Answer != "answer to message "+id {
					t.Errorf("session %s: %+v", id, r)
					continue
				}
				if answered.Add(1) == int64(warm) {
					warmOnce.Do(func() { warmFDs, warmRSS = fdsOf(t, p.cmd.Process.Pid), rssOf(t, p.cmd.Process.Pid) })
				}
			}
		})
	}
	for range n {
		ids <- uuid.NewString()
	}
	close(ids)
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	if int(answered.Load()) != n {
		t.Fatalf("%d of %d sessions answered", answered.Load(), n)
	}
	// Once everything went idle, the node holds no session lock.
	deadline := time.Now().Add(30 * time.Second)
	for held() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d advisory locks held 30 s after the last turn (%d before the first)", held(), base)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fds, rss := fdsOf(t, p.cmd.Process.Pid), rssOf(t, p.cmd.Process.Pid)
	t.Logf("%d sessions in %s (%.0f turns/s, %d at a time): advisory locks held at most %d (%d before), open files %d after %d sessions and %d after all, RSS %d MiB and %d MiB",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), conc, peak.Load(), base, warmFDs, warm, fds, warmRSS>>10, rss>>10)
	// A session holds its lock while in flight and for the idle time
	// after (200 ms, then its actor passivates): at the rate measured,
	// that is the concurrency plus the sessions touched in the last idle
	// period, with a second of slack for the sampling and the stop.
	rate := float64(n) / took.Seconds()
	bound := int64(conc + int(rate*1.2))
	if got := peak.Load() - base; got > bound || got >= int64(n) {
		t.Fatalf("%d session locks held at once (%d sessions, %d in flight, %.0f turns/s: at most %d expected): locks outlive their sessions' activity", got, n, conc, rate, bound)
	}
	if fds > warmFDs+8 {
		t.Fatalf("the node's open files grew from %d to %d with the sessions it saw", warmFDs, fds)
	}
}

// rssOf is the resident memory of process pid, in KiB.
func rssOf(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}
