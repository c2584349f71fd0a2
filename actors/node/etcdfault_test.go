package node_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// etcdOutage is how long TestClusterSurvivesEtcd keeps etcd away in its
// last fault (test-scaled; -etcd-outage=3m or more for the long variant).
var etcdOutage = flag.Duration("etcd-outage", 30*time.Second, "how long TestClusterSurvivesEtcd keeps etcd stopped")

// TestClusterSurvivesEtcd: three agent nodes (their own processes) and a
// client serve sessions while the coordinator, a real etcd, fails under
// them: the members' keys deleted behind their backs; etcd frozen
// (SIGSTOP) for three times the lease; killed and started again on its
// data 10 s later; stopped for a long while. Every turn asked during and
// after each fault is answered; afterwards every process sees the three
// members again without a restart, and new sessions are placed on every
// member. Last, a member killed while etcd is frozen leaves the view once
// etcd wakes, and the survivors stay. (With protoactor-go's etcd provider
// the turns asked after the freeze timed out: every member had dropped,
// and blocked, every other.)
func TestClusterSurvivesEtcd(t *testing.T) {
	const ttl = 2 * time.Second // etcd's minimum lease
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "answer to " + lastUser(r)} }
	t.Cleanup(llm.Close)
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL,
		"HERMES_NODE_TTL=" + ttl.String(), "HERMES_NODE_TOPOLOGY=1"}
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	var nodes []*proc
	for range 3 {
		nodes = append(nodes, startNode(t, env, races))
	}
	views := newViews(nodes)

	ctx := context.Background()
	log := testLog()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second, TTL: ttl}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Leave(); sys.Shutdown() })
	var mu sync.Mutex
	ranOn := map[string]string{} // turn's session → member that answered
	sessions := node.NewSessions(client)
	sessions.OnAnswer = func(s, n string) { mu.Lock(); ranOn[s] = n; mu.Unlock() }

	create := func() (string, error) {
		id := uuid.NewString()
		return id, session.Create(ctx, store, id, session.Start{Source: "api", Model: "gpt-4o-mini", System: "You are Hermes."})
	}
	newSession := func() string {
		id, err := create()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	turn := func(id, text string) error {
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		r := sessions.RunTurn(tctx, id, &session.Turn{ID: uuid.NewString(), Text: text})
		if r.Err != nil {
			return r.Err
		}
		if r.Answer != "answer to "+text {
			return fmt.Errorf("answered %q to %q", r.Answer, text)
		}
		return nil
	}
	addrs := func() string {
		var a []string
		for _, p := range nodes {
			a = append(a, p.addr)
		}
		return strings.Join(sortedCopy(a), ",")
	}()
	converged := func(what string) {
		t.Helper()
		gatewaytest.WaitFor(t, what+": the client sees the three members", func() bool {
			return strings.Join(sortedCopy(client.Members()), ",") == addrs
		})
		views.waitAll(t, what, addrs, 60*time.Second)
	}
	// spread runs a turn in each of n new sessions and checks that every
	// member ran some: the placement covers the whole membership.
	spread := func(what string) {
		t.Helper()
		const n = 30
		var wg sync.WaitGroup
		ids := make([]string, n)
		for i := range ids {
			ids[i] = newSession()
		}
		errs := make(chan error, n)
		for _, id := range ids {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- turn(id, "hello "+id) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		per := map[string]int{}
		mu.Lock()
		for _, id := range ids {
			per[ranOn[id]]++
		}
		mu.Unlock()
		for _, p := range nodes {
			if per[p.addr] == 0 {
				t.Fatalf("%s: member %s ran none of %d new sessions: %v", what, p.addr, n, per)
			}
		}
		t.Logf("%s: %d new sessions ran %v", what, n, per)
	}
	// load asks turns without pause (old sessions and new ones) until
	// stop is closed; it reports how many were asked and answered. Each
	// worker has sessions of its own (a message to a session running a
	// turn would join that turn).
	load := func(stop <-chan struct{}) func() (asked, answered int64) {
		var a, ok atomic.Int64
		var wg sync.WaitGroup
		for w := range 3 {
			old := []string{newSession(), newSession()}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := old[i%len(old)]
					if i%3 == 0 {
						var err error
						if id, err = create(); err != nil {
							t.Errorf("create a session: %v", err)
							return
						}
					}
					a.Add(1)
					if err := turn(id, fmt.Sprintf("turn %d of worker %d", i, w)); err != nil {
						t.Errorf("a turn asked while etcd failed: %v", err)
						continue
					}
					ok.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
			}()
		}
		return func() (int64, int64) { wg.Wait(); return a.Load(), ok.Load() }
	}

	converged("at start")
	spread("at start")

	// Every member's key deleted behind their backs (as when etcd drops
	// their leases): nobody leaves, and the members register again.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	const prefix = "/hermes/members/t/" // the provider's keys of cluster "t"
	if r, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil || r.Deleted != 3 {
		t.Fatalf("delete the members' keys: %v, %+v", err, r)
	}
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m := client.Members(); len(m) != 3 {
			t.Fatalf("keys deleted: the client's view fell to %v", m)
		}
	}
	// Each registers again once its watch or its periodic read sees its
	// key gone; on a loaded machine running the race detector that can
	// take a while, so the wait is longer than the usual 20 s.
	for end := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil && r.Count == 3 {
			break
		}
		if time.Now().After(end) {
			var n int64
			if r != nil {
				n = r.Count
			}
			t.Fatalf("90 s after their keys were deleted, %d of the three members registered again (%v)", n, err)
		}
	}
	converged("after the keys were deleted")
	spread("after the keys were deleted")

	// (a) etcd frozen for three leases: every lease expires at once when
	// it wakes.
	stop := make(chan struct{})
	done := load(stop)
	etcd.Pause(t)
	time.Sleep(3 * ttl)
	if w := client.Warning(); w == "" {
		t.Error("etcd frozen: the client gives no warning")
	} else {
		t.Logf("warning while frozen: %s", w)
	}
	etcd.Resume(t)
	time.Sleep(2 * ttl)
	close(stop)
	asked, answered := done()
	t.Logf("etcd frozen %v: %d of %d turns answered", 3*ttl, answered, asked)
	if asked == 0 || answered != asked {
		t.Fatalf("etcd frozen: %d of %d turns answered", answered, asked)
	}
	converged("after the freeze")
	spread("after the freeze")

	// (b) etcd killed and started again on its data 10 s later.
	stop = make(chan struct{})
	done = load(stop)
	etcd.Stop()
	time.Sleep(10 * time.Second)
	etcd.Start(t)
	time.Sleep(2 * ttl)
	close(stop)
	asked, answered = done()
	t.Logf("etcd restarted after 10 s: %d of %d turns answered", answered, asked)
	if asked == 0 || answered != asked {
		t.Fatalf("etcd restarted: %d of %d turns answered", answered, asked)
	}
	converged("after the restart")
	spread("after the restart")

	// (c) etcd away for a long while: the cluster serves on its last
	// membership, and takes etcd back when it returns.
	stop = make(chan struct{})
	done = load(stop)
	etcd.Stop()
	time.Sleep(*etcdOutage / 2)
	if w := client.Warning(); !strings.Contains(w, "etcd unreachable") {
		t.Errorf("etcd away: the client's warning is %q", w)
	}
	spread("while etcd is away")
	time.Sleep(*etcdOutage / 2)
	etcd.Start(t)
	time.Sleep(2 * ttl)
	close(stop)
	asked, answered = done()
	t.Logf("etcd away %v: %d of %d turns answered", *etcdOutage, answered, asked)
	if asked == 0 || answered != asked {
		t.Fatalf("etcd away: %d of %d turns answered", answered, asked)
	}
	converged("after the outage")
	spread("after the outage")
	gatewaytest.WaitFor(t, "the client's warning cleared", func() bool { return client.Warning() == "" })

	// (d) a member killed while etcd is frozen still leaves when etcd
	// wakes (its key expires and it does not answer), and only it: the
	// survivors, whose keys expired too, stay.
	etcd.Pause(t)
	dead := nodes[2]
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	etcd.Resume(t)
	nodes = nodes[:2]
	views.forget(dead.addr)
	addrs = strings.Join(sortedCopy([]string{nodes[0].addr, nodes[1].addr}), ",")
	gatewaytest.WaitFor(t, "the killed member out of the client's view", func() bool {
		return strings.Join(sortedCopy(client.Members()), ",") == addrs
	})
	views.waitAll(t, "after a kill under the freeze", addrs, 60*time.Second)
	spread("after a kill under the freeze")
}

// views follows the topology each helper node reports ("members …").
type views struct {
	mu   sync.Mutex
	last map[string]string // node → its latest topology
	gone []string          // killed nodes
	cond chan struct{}
}

func newViews(nodes []*proc) *views {
	v := &views{last: map[string]string{}, cond: make(chan struct{}, 1)}
	for _, p := range nodes {
		go func() {
			for l := range p.lines {
				if m, ok := strings.CutPrefix(l, "members "); ok {
					v.mu.Lock()
					if !slices.Contains(v.gone, p.addr) {
						v.last[p.addr] = m
					}
					v.mu.Unlock()
					select {
					case v.cond <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return v
}

// forget stops waiting for node addr's view (it was killed).
func (v *views) forget(addr string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.last, addr)
	v.gone = append(v.gone, addr)
}

// waitAll waits until every node's latest topology is want.
func (v *views) waitAll(t *testing.T, what, want string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		v.mu.Lock()
		all := len(v.last) == len(strings.Split(want, ","))
		for _, m := range v.last {
			all = all && m == want
		}
		last := fmt.Sprint(v.last)
		v.mu.Unlock()
		if all {
			return
		}
		select {
		case <-v.cond:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: the members' views did not converge on %s within %v: %s", what, want, within, last)
		}
	}
}

func sortedCopy(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
