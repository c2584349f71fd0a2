package node_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// procStat is a process's parent and user+system CPU time (clock ticks),
// from /proc.
type procStat struct {
	pid, ppid int
	ticks     int64
	cmdline   string
}

func procs() []procStat {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []procStat
	for _, d := range dirs {
		st, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		ppid, _ := strconv.Atoi(f[1])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		out = append(out, procStat{pid: pid, ppid: ppid, ticks: u + k, cmdline: string(cmd)})
	}
	return out
}

// cpuTicks is the CPU time of the processes whose command line contains
// marker and of their children (clock ticks), so that a benchmark can say
// which process its time went to. (The CPU of children that exited is not
// counted: PostgreSQL's backends live as long as their connections.)
func cpuTicks(marker string) int64 {
	ps := procs()
	roots := map[int]bool{}
	for _, p := range ps {
		if strings.Contains(p.cmdline, marker) {
			roots[p.pid] = true
		}
	}
	var total int64
	for _, p := range ps {
		if roots[p.pid] || roots[p.ppid] {
			total += p.ticks
		}
	}
	return total
}

// BenchmarkClusterTurns runs turns with an instant model (the scripted
// server answers at once) through the cluster: a client sends turns of 32
// sessions at once to 1 or 3 agent nodes (helper processes) on one
// PostgreSQL. It reports turns/s and the CPU each turn cost in the nodes,
// in PostgreSQL and in this process (client and model server): on loopback
// every part shares the machine's cores, so the CPU split says where a
// turn's cost is.
func BenchmarkClusterTurns(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchTurns(b, n) })
	}
}

func benchTurns(b *testing.B, nodes int) {
	pg := pgtest.Start(b)
	dsn := pg.Database(b)
	etcd := nodetest.StartEtcd(b)
	llm := llmtest.New()
	llm.NoRecord = true
	llm.SetDefault(llmtest.Reply{Content: "pong"})
	b.Cleanup(llm.Close)
	races := b.TempDir()
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}
	pids := map[int]bool{}
	for range nodes {
		pids[startNode(b, env, races).cmd.Process.Pid] = true
	}
	ctx := context.Background()
	log := testLog()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second}, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Leave(); sys.Shutdown() })
	deadline := time.Now().Add(60 * time.Second)
	for len(client.Members()) != nodes {
		if time.Now().After(deadline) {
			b.Fatalf("%d members, want %d", len(client.Members()), nodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const parallel = 32
	ids := make([]string, parallel)
	for i := range ids {
		ids[i] = uuid.NewString()
		if err := session.Create(ctx, store, ids[i], session.Start{Source: "bench", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			b.Fatal(err)
		}
	}
	s := node.NewSessions(client)
	// Warm up: every session's grain activated and recovered.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := s.RunTurn(ctx, id, &session.Turn{Text: "warm up"}); r.Err != nil {
				b.Error(r.Err)
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	// PostgreSQL's postmaster is the process started with -p <port>; its
	// children are the backends and background writers.
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	pgMarker := "\x00-p\x00" + u.Port() + "\x00"
	nodeTicks := func() int64 {
		var t int64
		for _, p := range procs() {
			if pids[p.pid] {
				t += p.ticks
			}
		}
		return t
	}
	nodeStart, pgStart := nodeTicks(), cpuTicks(pgMarker)
	var self0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if r := s.RunTurn(ctx, id, &session.Turn{Text: "ping"}); r.Err != nil || r.Answer != "pong" {
					b.Errorf("turn: %q %v", r.Answer, r.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	tick := 10.0 // ms per clock tick (USER_HZ 100)
	b.ReportMetric(float64(b.N)/el.Seconds(), "turns/s")
	b.ReportMetric(float64(nodeTicks()-nodeStart)*tick/float64(b.N), "node-cpu-ms/turn")
	b.ReportMetric(float64(cpuTicks(pgMarker)-pgStart)*tick/float64(b.N), "pg-cpu-ms/turn")
	var self1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	cpu := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	b.ReportMetric(float64((cpu(self1)-cpu(self0)).Microseconds())/1000/float64(b.N), "client+llm-cpu-ms/turn")
}

// BenchmarkRebuildFromPostgres rebuilds the session list and history
// projections (what a node builds in its home) from a log of
// HERMES_BENCH_EVENTS events (default 100,000) in PostgreSQL, beside the
// same rebuild from the embedded store in the same run (the baseline).
func BenchmarkRebuildFromPostgres(b *testing.B) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_EVENTS")); err == nil && v > 0 {
		total = v
	}
	ctx := context.Background()
	pg := pgtest.Start(b)
	pgStore, err := postgres.Open(ctx, pg.Database(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pgStore.Close()
	emb, err := embedded.Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Close()
	for _, st := range []events.Store{pgStore, emb} {
		if err := writeLog(ctx, st, total); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		store events.Store
	}{{"embedded", emb}, {"postgres", pgStore}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := projections.OpenDB(filepath.Join(b.TempDir(), "projections.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			run := projections.NewRunner(c.store, testLog(), db.Projection(sessions.NewModel()), db.Projection(history.NewModel()))
			b.ResetTimer()
			for range b.N {
				if err := run.Rebuild(ctx, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// writeLog writes sessions of 50 events (a user message, a tool call and
// its result, an answer, per turn) until total events are written.
func writeLog(ctx context.Context, st events.Store, total int) error {
	for n, s := 0, 0; n < total; s++ {
		sid := fmt.Sprintf("%08d-0000-4000-8000-000000000000", s)
		meta := schema.Meta{SessionID: sid, TurnID: sid + "-t"}
		evs := []schema.Envelope{schema.MustEnvelope(meta, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Reason: schema.StartNew})}
		for t := 0; len(evs) < 50; t++ {
			id := fmt.Sprintf("call_%d", t)
			evs = append(evs,
				schema.MustEnvelope(meta, schema.UserMessageAdded{Content: fmt.Sprintf("turn %d: why does the build fail?", t)}),
				schema.MustEnvelope(meta, schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{{ID: id, Type: "function",
					Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"go build ./..."}`}}}, FinishReason: "tool_calls", Model: "gpt-4o-mini"}),
				schema.MustEnvelope(meta, schema.ToolResultAdded{CallID: id, Name: "terminal", Content: "ok"}),
				schema.MustEnvelope(meta, schema.AssistantMessageAdded{Content: "It builds now.", FinishReason: "stop", Model: "gpt-4o-mini"}),
				schema.MustEnvelope(meta, schema.TurnCompleted{Iterations: 2}))
		}
		if len(evs) > total-n {
			evs = evs[:total-n]
		}
		if _, err := st.Append(ctx, events.SessionStream(sid), events.NoStream, evs...); err != nil {
			return err
		}
		n += len(evs)
	}
	return nil
}

// BenchmarkFailover measures failover time: three agent nodes; the node
// owning a session is killed (SIGKILL) while the model answers the
// session's turn, and the time from the kill to the turn's answer (from
// another node, which continues it from its events) is reported. A new
// node replaces the killed one between iterations (not timed). The time is
// mostly etcd's membership lease (protoactor-go's etcd provider: 3 s).
func BenchmarkFailover(b *testing.B) {
	pg := pgtest.Start(b)
	dsn := pg.Database(b)
	etcd := nodetest.StartEtcd(b)
	var mu sync.Mutex
	calls := map[string]int{}
	reached := make(chan struct{}, 1)
	llm := llmtest.New()
	llm.NoRecord = true
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		text := lastUser(r)
		if !strings.HasPrefix(text, "think slowly") {
			return &llmtest.Reply{Content: "pong"}
		}
		mu.Lock()
		defer mu.Unlock()
		calls[text]++
		if calls[text] == 1 {
			reached <- struct{}{}
			return &llmtest.Reply{Delay: 5 * time.Minute}
		}
		return &llmtest.Reply{Content: "thought it through"}
	}
	b.Cleanup(llm.Close)
	races := b.TempDir()
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}
	nodes := map[string]*proc{}
	for range 3 {
		p := startNode(b, env, races)
		nodes[p.addr] = p
	}
	ctx := context.Background()
	log := testLog()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second}, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Leave(); sys.Shutdown() })
	waitMembers := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for len(client.Members()) != n {
			if time.Now().After(deadline) {
				b.Fatalf("%d members, want %d", len(client.Members()), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMembers(3)
	sid := uuid.NewString()
	if err := session.Create(ctx, store, sid, session.Start{Source: "bench", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		b.Fatal(err)
	}
	owner := ""
	s := node.NewSessions(client)
	s.OnAnswer = func(_, n string) { owner = n }
	if r := s.RunTurn(ctx, sid, &session.Turn{Text: "hello"}); r.Err != nil {
		b.Fatal(r.Err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// The node started after the last kill may own the session now: a
		// quick turn says which node does.
		if r := s.RunTurn(ctx, sid, &session.Turn{Text: "hello"}); r.Err != nil {
			b.Fatal(r.Err)
		}
		done := make(chan session.TurnResult, 1)
		go func() { done <- s.RunTurn(ctx, sid, &session.Turn{Text: fmt.Sprintf("think slowly %d", i)}) }()
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			b.Fatal("the slow turn never reached the model")
		}
		killed := nodes[owner]
		if killed == nil {
			b.Fatalf("owner %q is not a node", owner)
		}
		b.StartTimer()
		start := time.Now()
		_ = killed.cmd.Process.Kill()
		r := <-done
		took := time.Since(start)
		b.StopTimer()
		total += took
		if r.Err != nil || r.Answer != "thought it through" {
			b.Fatalf("after the kill: %q %v", r.Answer, r.Err)
		}
		delete(nodes, killed.addr)
		_ = killed.cmd.Wait()
		p := startNode(b, env, races)
		nodes[p.addr] = p
		waitMembers(3)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
}
