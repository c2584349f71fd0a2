// Command gatewaybench measures the gateway the way a user runs it: the
// hermes binary's `gateway run` with the API server on, driven over HTTP
// by many concurrent chat clients (each request a new conversation),
// against a scripted OpenAI-compatible model (adapters/llm/llmtest) that
// answers after a fixed delay. Beside it, in the same run, the baseline:
// the same clients calling the model server directly. It reports turns
// per second, latency percentiles and the gateway process's CPU per turn.
//
//	go build -o /tmp/hermes ./cmd/hermes
//	go run ./cmd/gatewaybench -hermes /tmp/hermes [-chats 200] [-turns 4000] [-model-delay 50ms]
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
	flag.Parse()
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
