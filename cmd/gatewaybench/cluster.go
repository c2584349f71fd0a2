package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// clusterOptions are the flags of the cluster run (-nodes N).
type clusterOptions struct {
	bin          string
	nodes        int
	chats, turns int
	rounds       int
	delay        time.Duration
	// netns runs every node in a network namespace of its own, joined to
	// this one by a veth pair.
	netns bool
	// cpuFront pins this process (the HTTP clients and the model server)
	// and everything it starts but the nodes and the baseline: the
	// cluster's gateway, NATS, etcd and PostgreSQL ("" leaves them
	// unpinned). The baseline gateway keeps every CPU.
	cpuFront string
	// layouts are the cluster's phases of a round: each the CPUs of its
	// nodes (node i pinned to layout[i], taskset's list syntax; "" not
	// pinned). Default: 1…nodes nodes, unpinned.
	layouts [][]string
	// statements loads pg_stat_statements and prints, at the end, the
	// statements the cluster ran most per turn.
	statements bool
	// profile, when set, is a directory that gets a CPU profile of the
	// cluster gateway and of every node (HERMES_CPUPROFILE).
	profile string
	// trace, when above 0, sends that many requests one at a time at the
	// end, with the server logging every statement, and prints them by
	// process and transaction.
	trace int
}

// proc is a process whose CPU time the run reports.
type proc struct {
	name string
	pid  int
	cpu  func() (time.Duration, error)
}

// runCluster measures the user's path through the cluster — HTTP clients
// → the API server of `hermes gateway run --cluster` → its NATS bus →
// `hermes node run` ×k → PostgreSQL, with etcd as the membership — beside
// one `hermes gateway run` on its embedded store, interleaved round by
// round: per round the baseline, then the cluster with 1…nodes nodes.
func runCluster(o clusterOptions) error {
	if len(o.layouts) == 0 {
		for k := 1; k <= o.nodes; k++ {
			o.layouts = append(o.layouts, make([]string, k))
		}
	}
	o.nodes = 0
	for _, l := range o.layouts {
		o.nodes = max(o.nodes, len(l))
	}
	var mu sync.Mutex
	var cleanups []func()
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			mu.Lock()
			cs := cleanups
			mu.Unlock()
			for i := len(cs) - 1; i >= 0; i-- {
				cs[i]()
			}
		})
	}
	defer cleanup()
	atExit := func(f func()) {
		mu.Lock()
		cleanups = append(cleanups, f)
		mu.Unlock()
	}
	// Ctrl-C or SIGTERM still stops what the run started and removes the
	// namespaces and veth pairs.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			fmt.Fprintln(os.Stderr, "gatewaybench: interrupted, cleaning up")
			cleanup()
			os.Exit(130)
		}
	}()
	model := llmtest.New()
	model.NoRecord = true
	model.SetRoute(func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "Answered.", Delay: o.delay, Prompt: 20, Completion: 3}
	})
	atExit(model.Close)
	// The baseline first, before this process pins itself (what it starts
	// inherits its CPUs).
	gcfg := fmt.Sprintf("platforms:\n  api_server:\n    max_in_flight: %d\n", o.chats+16)
	base, err := startGateway(o.bin, model.URL, gcfg)
	if err != nil {
		return err
	}
	atExit(base.stop)
	if o.cpuFront != "" {
		set, err := cpuSet(o.cpuFront)
		if err != nil {
			return err
		}
		if err := pinAll(os.Getpid(), set); err != nil {
			return fmt.Errorf("pin to %s: %w", o.cpuFront, err)
		}
	}
	// The addresses the nodes reach this host's servers by: loopback, or
	// in namespaces the host's end of their veth pair.
	hostFor := func(int) string { return "127.0.0.1" }
	nodeHost := func(int) string { return "127.0.0.1" }
	listenAll := "127.0.0.1"
	if o.netns {
		undo, err := setupNetns(o.nodes)
		atExit(undo)
		if err != nil {
			return err
		}
		hostFor = func(i int) string { return fmt.Sprintf("10.77.%d.1", i+1) }
		nodeHost = func(i int) string { return fmt.Sprintf("10.77.%d.2", i+1) }
		listenAll = "0.0.0.0"
	}

	modelPort := 0
	if o.netns {
		// The same model server's handler on every address, for the nodes.
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: model.Config.Handler}
		go func() { _ = srv.Serve(l) }()
		atExit(func() { _ = srv.Close() })
		modelPort = l.Addr().(*net.TCPAddr).Port
	}
	modelURL := func(i int) string {
		if modelPort == 0 {
			return model.URL
		}
		return fmt.Sprintf("http://%s:%d", hostFor(i), modelPort)
	}

	pg, err := pgtest.Launch()
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	atExit(pg.Stop)
	if o.netns {
		if err := pgListenAll(pg); err != nil {
			return err
		}
	}
	if o.statements {
		if err := pgStatements(pg); err != nil {
			return err
		}
	}
	dsn, pgPort, err := pgDatabase(pg.URL, "gatewaybench")
	if err != nil {
		return err
	}
	// Each process's connections are named (application_name), for -trace.
	named := func(dsn, name string) string { return dsn + "&application_name=" + name }
	nodeDSN := func(i int) string {
		return named(strings.Replace(dsn, "127.0.0.1", hostFor(i), 1), fmt.Sprintf("node%d", i+1))
	}

	dir, err := os.MkdirTemp("", "gatewaybench-cluster-")
	if err != nil {
		return err
	}
	atExit(func() { os.RemoveAll(dir) })
	etcdPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := startServer(dir, "etcd", "etcd", "--name", "b", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", fmt.Sprintf("http://%s:%d", listenAll, etcdPort),
		"--advertise-client-urls", fmt.Sprintf("http://%s:%d", hostFor(0), etcdPort),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "b="+peer, "--log-level", "error")
	if err != nil {
		return err
	}
	atExit(etcd.kill)
	natsPort, err := freePort()
	if err != nil {
		return err
	}
	natsMon, err := freePort()
	if err != nil {
		return err
	}
	nats, err := startServer(dir, "nats", "nats-server", "-a", "127.0.0.1", "-p", strconv.Itoa(natsPort), "-m", strconv.Itoa(natsMon), "-js", "-sd", filepath.Join(dir, "jetstream"))
	if err != nil {
		return err
	}
	atExit(nats.kill)
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", etcdPort)); err != nil {
		return fmt.Errorf("etcd: %w\n%s", err, etcd.out.String())
	}
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", natsPort)); err != nil {
		return fmt.Errorf("nats-server: %w\n%s", err, nats.out.String())
	}

	// The nodes: started and stopped as the rounds need them.
	nodes := make([]*server, o.nodes)
	startNode := func(i int) error {
		home := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(home, 0o700); err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		args := []string{}
		if o.netns {
			args = append(args, "ip", "netns", "exec", nsName(i))
		}
		args = append(args, o.bin, "--home", home, "node", "run", "--cluster", fmt.Sprintf("%s:%d", hostFor(i), etcdPort),
			"--listen", fmt.Sprintf("%s:%d", nodeHost(i), port), "--model", "gpt-4o-mini", "--drain-timeout", "5s")
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "HERMES_STORE=" + nodeDSN(i),
			"OPENAI_BASE_URL=" + modelURL(i) + "/v1", "OPENAI_API_KEY=sk-bench"}
		if o.profile != "" {
			env = append(env, "HERMES_CPUPROFILE="+filepath.Join(o.profile, fmt.Sprintf("node%d.pprof", i+1)))
		}
		s, err := startProc(fmt.Sprintf("node %d", i+1), env, args...)
		if err != nil {
			return err
		}
		nodes[i] = s
		return s.waitFor("running at", 60*time.Second)
	}
	stopNode := func(i int) {
		if nodes[i] != nil {
			nodes[i].stop()
			nodes[i] = nil
		}
	}
	atExit(func() {
		for i := range nodes {
			stopNode(i)
		}
	})
	if err := startNode(0); err != nil {
		return err
	}

	// The cluster's gateway (NATS bus, PostgreSQL store) and the baseline
	// (one process on its embedded store).
	gport, err := freePort()
	if err != nil {
		return err
	}
	apiPort, err := freePort()
	if err != nil {
		return err
	}
	mport, err := freePort()
	if err != nil {
		return err
	}
	ghome := filepath.Join(dir, "gateway")
	if err := os.MkdirAll(ghome, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ghome, "config.yaml"), []byte(gcfg), 0o600); err != nil {
		return err
	}
	genv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ghome, "HERMES_STORE=" + named(dsn, "gateway"), "OPENAI_BASE_URL=" + model.URL + "/v1", "OPENAI_API_KEY=sk-bench",
		"API_SERVER_ENABLED=true", "API_SERVER_KEY=" + key, "API_SERVER_PORT=" + strconv.Itoa(apiPort)}
	if o.profile != "" {
		genv = append(genv, "HERMES_CPUPROFILE="+filepath.Join(o.profile, "gateway-cluster.pprof"))
	}
	cg, err := startProc("cluster gateway", genv, o.bin, "--home", ghome, "gateway", "run", "--model", "gpt-4o-mini",
		"--bus", fmt.Sprintf("nats://127.0.0.1:%d", natsPort), "--cluster", fmt.Sprintf("127.0.0.1:%d", etcdPort),
		"--listen", fmt.Sprintf("%s:%d", hostFor(0), gport), "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport))
	if err != nil {
		return err
	}
	atExit(cg.stop)
	clusterURL := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	if err := waitHealth(clusterURL, cg); err != nil {
		return err
	}

	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.chats, MaxConnsPerHost: o.chats}}
	through := func(url string) func(int) error {
		return func(i int) error {
			return post(client, url+"/v1/chat/completions", key, fmt.Sprintf(`{"model":"hermes-agent","messages":[{"role":"user","content":"hello %d"}]}`, i))
		}
	}
	pgCPU := func() (time.Duration, error) { return postgresCPU(pgPort) }
	self := proc{name: "clients + model (this process)", pid: os.Getpid(), cpu: func() (time.Duration, error) { return cpuTime(os.Getpid()) }}
	pgProc := proc{name: "PostgreSQL (all backends)", cpu: pgCPU}

	// measure runs one phase: a warm-up, then turns requests, with the
	// CPU time of each process over it.
	type phase struct {
		name string
		res  result
		cpu  []time.Duration
		who  []string
		// counts is what the counters of NATS and PostgreSQL grew by.
		counts [4]int64
		// busy is each CPU's busy share over the phase (every process's,
		// this run's or not).
		busy []float64
	}
	measure := func(name, url string, procs []proc) (phase, error) {
		if _, err := load(o.chats, o.chats, through(url)); err != nil {
			return phase{}, fmt.Errorf("%s: warm-up: %w", name, err)
		}
		before := make([]time.Duration, len(procs))
		for i, p := range procs {
			if before[i], err = p.cpu(); err != nil {
				return phase{}, fmt.Errorf("%s: CPU of %s: %w", name, p.name, err)
			}
		}
		c0 := counters(natsMon, dsn)
		b0 := cpuBusy()
		res, err := load(o.chats, o.turns, through(url))
		if err != nil {
			return phase{}, fmt.Errorf("%s: %w", name, err)
		}
		c1 := counters(natsMon, dsn)
		b1 := cpuBusy()
		ph := phase{name: name, res: res}
		for i := range min(len(b0), len(b1)) {
			if d := b1[i][1] - b0[i][1]; d > 0 {
				ph.busy = append(ph.busy, float64(b1[i][0]-b0[i][0])/float64(d))
			}
		}
		for i := range c1 {
			ph.counts[i] = c1[i] - c0[i]
		}
		for i, p := range procs {
			after, err := p.cpu()
			if err != nil {
				return phase{}, fmt.Errorf("%s: CPU of %s: %w", name, p.name, err)
			}
			ph.cpu = append(ph.cpu, after-before[i])
			ph.who = append(ph.who, p.name)
		}
		return ph, nil
	}
	pidCPU := func(name string, pid int) proc {
		return proc{name: name, pid: pid, cpu: func() (time.Duration, error) { return cpuTime(pid) }}
	}

	load1, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("cluster run: %d rounds × (baseline, cluster with up to %d nodes), %d requests each from %d concurrent clients (each a new conversation), model answering after %s; netns %v, front CPUs %q; load average %s\n",
		o.rounds, o.nodes, o.turns, o.chats, o.delay, o.netns, o.cpuFront, strings.Join(strings.Fields(string(load1))[:3], " "))
	var phases []phase
	for r := range o.rounds {
		ph, err := measure("one gateway, embedded store", base.url, []proc{pidCPU("gateway", base.cmd.Process.Pid), self})
		if err != nil {
			return err
		}
		phases = append(phases, ph)
		fmt.Println(report(r, ph.name, ph.res, o.turns, ph.who, ph.cpu, 0, 0))
		baseRate, baseCPU := ph.res.rate, sum(ph.cpu)
		for _, layout := range o.layouts {
			k := len(layout)
			for i := range o.nodes {
				if i < k && nodes[i] == nil {
					if err := startNode(i); err != nil {
						return err
					}
				}
				if i >= k {
					stopNode(i)
				}
			}
			if err := waitMembers(metricsURL, k); err != nil {
				return err
			}
			name := fmt.Sprintf("cluster, %d node(s)", k)
			for i, cpus := range layout {
				if cpus == "" {
					cpus = fmt.Sprintf("0-%d", runtime.NumCPU()-1)
				} else {
					if i == 0 {
						name += " on CPU"
					}
					name += " " + cpus
				}
				set, err := cpuSet(cpus)
				if err != nil {
					return err
				}
				if err := pinAll(nodes[i].cmd.Process.Pid, set); err != nil {
					return fmt.Errorf("pin node %d to %s: %w", i+1, cpus, err)
				}
			}
			procs := []proc{pidCPU("gateway", cg.cmd.Process.Pid)}
			for i := range k {
				procs = append(procs, pidCPU(fmt.Sprintf("node %d", i+1), nodes[i].cmd.Process.Pid))
			}
			procs = append(procs, pidCPU("NATS", nats.cmd.Process.Pid), pidCPU("etcd", etcd.cmd.Process.Pid), pgProc, self)
			ph, err := measure(name, clusterURL, procs)
			if err != nil {
				return fmt.Errorf("%w\ngateway: %s", err, tail(cg.out.String(), 2000))
			}
			phases = append(phases, ph)
			fmt.Println(report(r, ph.name, ph.res, o.turns, ph.who, ph.cpu, baseRate, baseCPU))
			t := float64(o.turns)
			busy := ""
			for i, b := range ph.busy {
				busy += fmt.Sprintf(" CPU%d %.0f%%", i, b*100)
			}
			fmt.Printf("         per turn: NATS %.1f messages in, %.1f out; PostgreSQL %.1f transactions, %.1f rows written; busy:%s\n",
				float64(ph.counts[0])/t, float64(ph.counts[1])/t, float64(ph.counts[2])/t, float64(ph.counts[3])/t, busy)
		}
	}
	if o.statements {
		if err := printStatements(dsn, o.rounds*len(o.layouts)*(o.turns+o.chats)); err != nil {
			return err
		}
	}
	if o.trace > 0 {
		if err := traceTurns(pg, o.trace, through(clusterURL)); err != nil {
			return err
		}
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average at the end: %s\n", strings.Join(strings.Fields(string(load2))[:3], " "))
	return nil
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// report is one phase's line: rate, latency, CPU per turn of each
// process and in all, and the ratios to the round's baseline.
func report(round int, name string, r result, turns int, who []string, cpu []time.Duration, baseRate float64, baseCPU time.Duration) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(turns) }
	var b strings.Builder
	fmt.Fprintf(&b, "round %d  %-36s %7.0f turns/s  p50 %8s  p99 %8s  CPU/turn %.2f ms [", round+1, name, r.rate, r.p50, r.p99, ms(sum(cpu)))
	for i, w := range who {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f", w, ms(cpu[i]))
	}
	b.WriteString("]")
	if baseRate > 0 {
		fmt.Fprintf(&b, "  → %.2f× the baseline's turns/s, %.2f× its CPU/turn", r.rate/baseRate, float64(sum(cpu))/float64(baseCPU))
	}
	return b.String()
}

// server is a process the run started, with its output.
type server struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func startServer(dir, name, bin string, args ...string) (*server, error) {
	return startProc(name, append(os.Environ(), "HOME="+dir), append([]string{bin}, args...)...)
}

func startProc(name string, env []string, args ...string) (*server, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	s := &server{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	return s, nil
}

// stop ends s with SIGTERM (a gateway or node then leaves in order, and
// writes its CPU profile), SIGKILL after 30 s.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *server) waitFor(text string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for !strings.Contains(s.out.String(), text) {
		select {
		case <-s.done:
			return fmt.Errorf("%s exited: %s", s.name, tail(s.out.String(), 2000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %q after %s: %s", s.name, text, d, tail(s.out.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func waitHealth(url string, s *server) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up: %s", s.name, tail(s.out.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitTCP(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitMembers waits until the gateway's view of the cluster
// (hermes_cluster_members in its metrics) has k nodes.
func waitMembers(metrics string, k int) error {
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for {
		resp, err := http.Get(metrics)
		if err == nil {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "hermes_cluster_members") {
					last = l
					f := strings.Fields(l)
					if n, _ := strconv.ParseFloat(f[len(f)-1], 64); int(n) == k {
						resp.Body.Close()
						return nil
					}
				}
			}
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway did not see %d nodes (last: %q)", k, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// counters are NATS's messages in and out (its monitoring's /varz) and
// the PostgreSQL database's transactions and rows written (zeros for what
// cannot be read).
func counters(natsMon int, dsn string) [4]int64 {
	var c [4]int64
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", natsMon)); err == nil {
		var v struct {
			InMsgs  int64 `json:"in_msgs"`
			OutMsgs int64 `json:"out_msgs"`
		}
		if json.NewDecoder(resp.Body).Decode(&v) == nil {
			c[0], c[1] = v.InMsgs, v.OutMsgs
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		_ = conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = current_database()`).Scan(&c[2], &c[3])
		conn.Close(ctx)
	}
	return c
}

// pgStatements loads pg_stat_statements into the server (a restart).
func pgStatements(pg *pgtest.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
	conn.Close(ctx)
	if err != nil {
		return err
	}
	return pg.Restart()
}

// printStatements prints the statements run most often in the database
// of dsn, per turn of the cluster (turns in all, warm-ups included).
func printStatements(dsn string, turns int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT s.calls, s.total_exec_time, s.rows, left(regexp_replace(s.query, '\s+', ' ', 'g'), 150)
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() ORDER BY s.calls DESC LIMIT 30`)
	if err != nil {
		return fmt.Errorf("pg_stat_statements (CREATE EXTENSION pg_stat_statements needs postgresql-contrib): %w", err)
	}
	defer rows.Close()
	fmt.Printf("statements of the cluster's database, per turn (%d turns in all):\n", turns)
	for rows.Next() {
		var calls, n int64
		var ms float64
		var q string
		if err := rows.Scan(&calls, &ms, &n, &q); err != nil {
			return err
		}
		fmt.Printf("  %6.2f calls %7.3f ms %6.2f rows  %s\n", float64(calls)/float64(turns), ms/float64(turns), float64(n)/float64(turns), q)
	}
	return rows.Err()
}

// pgDatabase creates database name on the server at url and returns its
// URL and the server's port.
func pgDatabase(url, name string) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", 0, err
	}
	port := int(conn.Config().Port)
	dsn := strings.Replace(url, "/postgres?", "/"+name+"?", 1)
	if c2, err := pgx.Connect(ctx, dsn); err == nil {
		_, _ = c2.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements") // where loaded (-statements)
		c2.Close(ctx)
	}
	return dsn, port, nil
}

// pgListenAll makes the server take connections on every address (trust
// for 10.77.0.0/16, the namespaces' veth addresses) and restarts it. The
// server's files are root's to edit: the run needs root for namespaces.
func pgListenAll(pg *pgtest.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		return err
	}
	var hba, data string
	err = conn.QueryRow(ctx, "SHOW hba_file").Scan(&hba)
	if err == nil {
		err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&data)
	}
	conn.Close(ctx)
	if err != nil {
		return err
	}
	// pg_ctl restart starts the server with the options it was started
	// with (postmaster.opts), which name the loopback address.
	opts := filepath.Join(data, "postmaster.opts")
	b, err := os.ReadFile(opts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(opts, bytes.ReplaceAll(b, []byte("listen_addresses=127.0.0.1"), []byte("listen_addresses=*")), 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(hba, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("host all all 10.77.0.0/16 trust\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return pg.Restart()
}

// postgresCPU is the CPU time of the PostgreSQL server listening on port:
// its postmaster (with the children it has reaped) and its live backends.
func postgresCPU(port int) (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	type st struct {
		ppid int
		own  time.Duration
		kids time.Duration
	}
	all := map[int]st{}
	master := 0
	flag := "-p " + strconv.Itoa(port) + " "
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if !strings.Contains(s, "(postgres)") {
			continue
		}
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 {
			continue
		}
		n := func(i int) time.Duration {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			return time.Duration(v) * time.Second / 100
		}
		ppid, _ := strconv.Atoi(f[1])
		all[pid] = st{ppid: ppid, own: n(11) + n(12), kids: n(13) + n(14)}
		if cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}), []byte(flag)) {
			master = pid
		}
	}
	if master == 0 {
		return 0, fmt.Errorf("no postmaster on port %d", port)
	}
	t := all[master].own + all[master].kids
	for pid, s := range all {
		if s.ppid == master && pid != master {
			t += s.own
		}
	}
	return t, nil
}

// cpuBusy is each CPU's busy and total jiffies (/proc/stat).
func cpuBusy() [][2]int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	var out [][2]int64
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var busy, all int64
		for i, v := range f[1:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			all += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		out = append(out, [2]int64{busy, all})
	}
	return out
}

// pinAll pins every thread of process pid to set (sched_setaffinity is a
// thread's; threads made later inherit it from theirs).
func pinAll(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// cpuSet parses taskset's list syntax (0,2-3).
func cpuSet(list string) (*unix.CPUSet, error) {
	var set unix.CPUSet
	for _, part := range strings.Split(list, ",") {
		lo, hi, _ := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", list, err)
		}
		b := a
		if hi != "" {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("CPU list %q: %w", list, err)
			}
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return &set, nil
}

func nsName(i int) string { return fmt.Sprintf("hermesbench%d", i+1) }

// setupNetns makes a network namespace per node, joined to this one by a
// veth pair: 10.77.(i+1).1 here, 10.77.(i+1).2 in the namespace, whose
// default route is this end (so the nodes reach each other through this
// namespace, with forwarding on for the run). undo removes them all and
// puts forwarding back.
func setupNetns(n int) (undo func(), err error) {
	var steps [][]string
	undos := []func(){}
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return undo, err
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return undo, fmt.Errorf("turn on IPv4 forwarding: %w", err)
	}
	undos = append(undos, func() { _ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", fwd, 0o644) })
	for i := range n {
		ns, host, peer := nsName(i), fmt.Sprintf("hbv%d", i+1), fmt.Sprintf("hbp%d", i+1)
		_ = ip("link", "del", host) // a run killed before its cleanup
		_ = ip("netns", "del", ns)
		if err := ip("netns", "add", ns); err != nil {
			return undo, err
		}
		undos = append(undos, func() {
			_ = ip("link", "del", host) // and so its peer
			_ = ip("netns", "del", ns)
		})
		a, b := fmt.Sprintf("10.77.%d.1", i+1), fmt.Sprintf("10.77.%d.2", i+1)
		steps = [][]string{
			{"link", "add", host, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", ns},
			{"addr", "add", a + "/24", "dev", host},
			{"link", "set", host, "up"},
			{"-n", ns, "addr", "add", b + "/24", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
			{"-n", ns, "route", "add", "default", "via", a},
		}
		for _, s := range steps {
			if err := ip(s...); err != nil {
				return undo, err
			}
		}
	}
	return undo, nil
}

// syncBuffer is a child's output, written by its pipe and read by us.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
