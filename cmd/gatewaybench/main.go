// Command gatewaybench measures the gateway the way a user runs it: the
// hermes binary's `gateway run` with the API server on, driven over HTTP
// by many concurrent chat clients (each request a new conversation),
// against a scripted OpenAI-compatible model (adapters/llm/llmtest) that
// answers after a fixed delay. Beside it, in the same run, the baseline:
// the same clients calling the model server directly. It reports turns
// per second, latency percentiles and the gateway process's CPU per turn.
//
// With -soak D it runs the soak instead: new conversations at a steady
// rate (-rate per second) for D, against a gateway whose sessions go idle
// after -idle, sampling the gateway's resident memory and open files as
// it goes — a long-running gateway's footprint must follow the active
// sessions, not the sessions it has seen.
//
//	go build -o /tmp/hermes ./cmd/hermes
//	go run ./cmd/gatewaybench -hermes /tmp/hermes [-chats 200] [-turns 4000] [-model-delay 50ms]
//	go run ./cmd/gatewaybench -hermes /tmp/hermes -soak 10m [-rate 40] [-idle 5s]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

func main() {
	hermes := flag.String("hermes", "", "path to the hermes binary (required)")
	chats := flag.Int("chats", 200, "concurrent clients")
	turns := flag.Int("turns", 4000, "requests in all (after a warm-up of one per client)")
	delay := flag.Duration("model-delay", 50*time.Millisecond, "how long the scripted model takes to answer")
	soak := flag.Duration("soak", 0, "run the soak for this long instead of the throughput run")
	rate := flag.Int("rate", 40, "soak: new conversations per second")
	idle := flag.Duration("idle", 5*time.Second, "soak: sessions.idle_after of the gateway")
	nodes := flag.Int("nodes", 0, "cluster run: up to this many agent nodes behind `gateway run --cluster` (NATS bus, PostgreSQL, etcd), beside one gateway on its embedded store")
	rounds := flag.Int("rounds", 2, "cluster run: interleaved rounds")
	netns := flag.Bool("netns", false, "cluster run: each node in a network namespace of its own (needs root)")
	cpuFront := flag.String("cpu-front", "", "cluster run: pin the clients, model, gateways, NATS, etcd and PostgreSQL to these CPUs (taskset list)")
	layouts := flag.String("layouts", "", "cluster run: the cluster's phases of a round, separated by ';', each the CPUs of its nodes separated by '/' (taskset lists), e.g. '1;1/1;1/0': one node on CPU 1, two on CPU 1, one on 1 and one on 0 (default: 1…nodes nodes, unpinned)")
	statements := flag.Bool("statements", false, "cluster run: load pg_stat_statements and print the statements per turn at the end")
	profile := flag.String("profile", "", "cluster run: write CPU profiles of the cluster gateway and the nodes into this directory")
	trace := flag.Int("trace", 0, "cluster run: at the end, send this many requests one at a time with PostgreSQL logging every statement, and print the statements of each process (application_name) with their transactions")
	flag.Parse()
	if *hermes != "" && (*nodes > 0 || *layouts != "") {
		o := clusterOptions{bin: *hermes, nodes: *nodes, chats: *chats, turns: *turns, rounds: *rounds, delay: *delay,
			netns: *netns, cpuFront: *cpuFront, profile: *profile, statements: *statements, trace: *trace}
		if *layouts != "" {
			for _, l := range strings.Split(*layouts, ";") {
				o.layouts = append(o.layouts, strings.Split(l, "/"))
			}
		}
		if err := runCluster(o); err != nil {
			fmt.Fprintln(os.Stderr, "gatewaybench:", err)
			os.Exit(1)
		}
		return
	}
	if *hermes != "" && *soak > 0 {
		if err := runSoak(*hermes, *soak, *rate, *idle, *delay); err != nil {
			fmt.Fprintln(os.Stderr, "gatewaybench:", err)
			os.Exit(1)
		}
		return
	}
	if *hermes == "" || *chats < 1 || *turns < *chats {
		fmt.Fprintln(os.Stderr, "usage: gatewaybench -hermes PATH [-chats N] [-turns M>=N] [-model-delay D]")
		os.Exit(2)
	}
	if err := run(*hermes, *chats, *turns, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

const key = "gatewaybench-key-0123456789"

func run(bin string, chats, turns int, delay time.Duration) error {
	model := llmtest.New()
	model.NoRecord = true
	model.SetRoute(func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "Answered.", Delay: delay, Prompt: 20, Completion: 3}
	})
	defer model.Close()
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: chats, MaxConnsPerHost: chats}}

	// The baseline: the model server alone, same clients.
	direct := func(i int) error {
		return post(client, model.URL+"/v1/chat/completions", "", fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hello %d"}]}`, i))
	}
	base, err := load(chats, turns, direct)
	if err != nil {
		return fmt.Errorf("model server alone: %w", err)
	}

	home, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	port, err := freePort()
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf("platforms:\n  api_server:\n    max_in_flight: %d\n", chats+16)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--home", home, "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENAI_BASE_URL=" + model.URL + "/v1", "OPENAI_API_KEY=sk-bench",
		"API_SERVER_ENABLED=true", "API_SERVER_KEY=" + key, "API_SERVER_PORT=" + strconv.Itoa(port)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway did not come up: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	through := func(i int) error {
		return post(client, url+"/v1/chat/completions", key, fmt.Sprintf(`{"model":"hermes-agent","messages":[{"role":"user","content":"hello %d"}]}`, i))
	}
	// Warm-up: one request per client.
	if _, err := load(chats, chats, through); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	cpu0, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return err
	}
	gw, err := load(chats, turns, through)
	if err != nil {
		return fmt.Errorf("through the gateway: %w\n%s", err, tail(stderr.String(), 2000))
	}
	cpu1, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("%d requests from %d concurrent clients, scripted model answering after %s\n", turns, chats, delay)
	fmt.Printf("  %-34s %8.0f req/s   p50 %8s   p99 %8s\n", "model server alone (baseline)", base.rate, base.p50, base.p99)
	fmt.Printf("  %-34s %8.0f turns/s p50 %8s   p99 %8s   gateway CPU %.2f ms/turn\n", "hermes gateway run + API server", gw.rate, gw.p50, gw.p99,
		float64((cpu1-cpu0).Microseconds())/1000/float64(turns))
	fmt.Printf("  ratio: %.2f× the model server's rate\n", gw.rate/base.rate)
	return nil
}

type result struct {
	rate     float64
	p50, p99 time.Duration
}

// load runs n calls of f over c workers and measures them.
func load(c, n int, f func(i int) error) (result, error) {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				err := f(i)
				lat[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return result{}, firstErr
	}
	el := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return result{rate: float64(n) / el.Seconds(), p50: round(lat[n/2]), p99: round(lat[n*99/100])}, nil
}

func post(c *http.Client, url, key, body string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte("Answered.")) {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, tail(string(b), 300))
	}
	return nil
}

// cpuTime is the user+system CPU time of process pid (its threads).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// gateway is a `hermes gateway run` with the API server on.
type gateway struct {
	cmd     *exec.Cmd
	url     string
	metrics string
	stderr  *bytes.Buffer
	home    string
}

// startGateway starts the gateway on a new home with extra config.yaml
// lines, and waits for its API server.
func startGateway(bin, modelURL, extra string) (*gateway, error) {
	home, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(extra), 0o600); err != nil {
		return nil, err
	}
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--home", home, "gateway", "run", "--model", "gpt-4o-mini", "--metrics-listen", "127.0.0.1:"+strconv.Itoa(mport))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENAI_BASE_URL=" + modelURL + "/v1", "OPENAI_API_KEY=sk-bench",
		"API_SERVER_ENABLED=true", "API_SERVER_KEY=" + key, "API_SERVER_PORT=" + strconv.Itoa(port)}
	if p := os.Getenv("HERMES_HEAPPROFILE"); p != "" {
		cmd.Env = append(cmd.Env, "HERMES_HEAPPROFILE="+p) // the gateway's live heap at its exit
	}
	g := &gateway{cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port), metrics: "http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics", stderr: &bytes.Buffer{}, home: home}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(g.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return g, nil
			}
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("the gateway did not come up: %s", g.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(g.home)
}

// footprint is a process's resident memory (KiB: all of it, and the
// anonymous part — the heaps, not the files mapped in) and open files.
func footprint(pid int) (rss, anon, fds int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	kb := func(v string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		return n
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rss = kb(v)
		}
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	return rss, anon, len(es), nil
}

// runSoak sends rate new conversations a second for d and samples the
// gateway's footprint every tenth of d.
func runSoak(bin string, d time.Duration, rate int, idle, delay time.Duration) error {
	model := llmtest.New()
	model.NoRecord = true
	model.SetRoute(func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "Answered.", Delay: delay, Prompt: 20, Completion: 3}
	})
	defer model.Close()
	g, err := startGateway(bin, model.URL, fmt.Sprintf("sessions:\n  idle_after: %s\nplatforms:\n  api_server:\n    max_in_flight: %d\n", idle, rate*4+16))
	if err != nil {
		return err
	}
	defer g.stop()
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: rate * 2}}
	pid := g.cmd.Process.Pid
	type sample struct {
		at        time.Duration
		sessions  int64
		rss, anon int
		heap      int64
		fds       int
		cpu       time.Duration
		failed    int64
	}
	var sent, failed atomic.Int64
	var samples []sample
	take := func(at time.Duration) error {
		rss, anon, fds, err := footprint(pid)
		if err != nil {
			return err
		}
		cpu, err := cpuTime(pid)
		if err != nil {
			return err
		}
		samples = append(samples, sample{at: at.Round(time.Second), sessions: sent.Load(), rss: rss, anon: anon, heap: goHeap(g.metrics), fds: fds, cpu: cpu, failed: failed.Load()})
		return nil
	}
	if err := take(0); err != nil {
		return err
	}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	every := max(d/10, time.Second)
	next := every
	var wg sync.WaitGroup
	for time.Since(start) < d {
		<-tick.C
		i := sent.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"hermes-agent","messages":[{"role":"user","content":"hello %d"}]}`, i)
			if err := post(client, g.url+"/v1/chat/completions", key, body); err != nil {
				failed.Add(1)
			}
		}()
		if el := time.Since(start); el >= next {
			if err := take(el); err != nil {
				return err
			}
			next += every
		}
	}
	wg.Wait()
	// The last sessions go idle and passivate.
	time.Sleep(idle + 2*time.Second)
	if err := take(time.Since(start)); err != nil {
		return err
	}
	fmt.Printf("soak: %d new conversations at %d/s for %s, sessions idle after %s, model answering after %s\n", sent.Load(), rate, d, idle, delay)
	fmt.Printf("  %8s %10s %10s %10s %10s %8s %10s %8s\n", "time", "sessions", "RSS MiB", "anon MiB", "Go heap", "files", "CPU s", "failed")
	for _, s := range samples {
		fmt.Printf("  %8s %10d %10.1f %10.1f %10.1f %8d %10.1f %8d\n", s.at, s.sessions, float64(s.rss)/1024, float64(s.anon)/1024, float64(s.heap)/(1<<20),
			s.fds, s.cpu.Seconds(), s.failed)
	}
	if len(samples) >= 3 {
		a, b := samples[1], samples[len(samples)-1]
		fmt.Printf("  from the first sample under load to the end: RSS %+.1f MiB (anonymous %+.1f), open files %+d, over %d more sessions\n",
			float64(b.rss-a.rss)/1024, float64(b.anon-a.anon)/1024, b.fds-a.fds, b.sessions-a.sessions)
	}
	if failed.Load() > 0 {
		return fmt.Errorf("%d of %d conversations failed", failed.Load(), sent.Load())
	}
	return nil
}

// goHeap is the gateway's Go heap in use, in bytes, from its Prometheus
// metrics (go_memstats_heap_inuse_bytes); 0 when it cannot be read.
func goHeap(url string) int64 {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}
