// Command toolbench measures what one more tool call costs a turn of the
// hermes binary, run the way a user runs it (`hermes chat -q`, a fresh
// process per turn), beside two baselines measured in the same run:
//
//   - the floor: what a tool call cannot cost less than — a fork and exec
//     of the same command with its output captured, one fsync of an
//     appended record, and one HTTP round trip to the same model server;
//   - optionally the Python Hermes Agent (-python: its `hermes` command),
//     on the same scripted model with the same home layout.
//
// Each system runs turns of S (1) and of K sequential terminal calls against a
// scripted OpenAI-compatible model (adapters/llm/llmtest) that answers
// instantly; runs are interleaved (each turn's dirty pages written back
// with sync(2) before the next, untimed), and the cost of an extra call is
// (median(K) - median(S)) / (K - S), S being 1 unless -short says
// otherwise (-short 20 -k 80 leaves out what a turn costs once, such as
// the projection work a turn's process leaves to the next one). With -strace it also counts, with
// strace -f -c, the syscalls of one turn of each size and reports fsyncs
// and failing syscalls per extra call (the command's own bash excluded from
// the failures, as the floor runs the same bash; EAGAIN excluded, as that is
// how non-blocking I/O waits, and a futex's ETIMEDOUT, as that is a timed
// sleep running out).
//
//	go build -o /tmp/hermes ./cmd/hermes
//	go run ./cmd/toolbench -hermes /tmp/hermes [-before /tmp/hermes-old] [-python .ci/hermes-venv/bin/hermes] [-short 1] [-k 20] [-reps 7] [-strace]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

func main() {
	hermes := flag.String("hermes", "", "path to the hermes binary (required)")
	python := flag.String("python", "", "path to the Python Hermes Agent's hermes command (optional baseline)")
	before := flag.String("before", "", "path to another hermes binary (an earlier build) measured beside -hermes (optional)")
	k := flag.Int("k", 20, "tool calls in the long turn")
	short := flag.Int("short", 1, "tool calls in the short turn")
	reps := flag.Int("reps", 7, "interleaved repetitions of every run")
	sandbox := flag.String("sandbox", "workspace-write", "hermes --sandbox mode")
	straceOn := flag.Bool("strace", false, "count syscalls per extra call with strace -f -c")
	keep := flag.String("keep", "", "keep the homes the turns ran in, and with -strace copy the strace logs (strace-SYSTEM-N.txt) into this directory")
	serve := flag.Int("serve", 0, "serve the scripted model of a turn of this many calls and print its URL, for a turn run by hand (under perf or strace); ends on interrupt")
	flag.Parse()
	if *serve > 0 {
		srv := llmtest.New()
		srv.NoRecord = true
		srv.SetRoute(script(*serve))
		fmt.Println(srv.URL)
		fmt.Printf("e.g.: OPENAI_BASE_URL=%s/v1 OPENAI_API_KEY=sk-bench hermes --home HOME chat -q go --model gpt-test --yolo (HOME/config.yaml: the learning loop off, as in the runs)\n", srv.URL)
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		<-stop
		srv.Close()
		return
	}
	if *hermes == "" || *short < 1 || *k <= *short || *reps < 1 {
		fmt.Fprintln(os.Stderr, "usage: toolbench -hermes PATH [-python PATH] [-k N>=2] [-reps N] [-sandbox MODE] [-strace]")
		os.Exit(2)
	}
	if err := run(*hermes, *before, *python, *short, *k, *reps, *sandbox, *straceOn, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "toolbench:", err)
		os.Exit(1)
	}
}

// system is one thing measured: it runs one turn of n tool calls against
// the model server at url.
type system struct {
	name string
	turn func(n int, url string) error
}

func run(hermesBin, beforeBin, pythonBin string, short, k, reps int, sandbox string, straceOn bool, keep string) error {
	root, err := os.MkdirTemp("", "toolbench-")
	if err != nil {
		return err
	}
	if keep == "" {
		defer os.RemoveAll(root)
	} else {
		fmt.Printf("homes kept in %s\n", root)
	}
	// One scripted model per turn size: it answers by what the request
	// holds — a terminal call while the turn has fewer than n results since
	// its user message "go", then "done" (a request without tools, such as
	// a title, gets "done" too, and so does one whose last user message is
	// another, such as the learning loop's review after a long turn: it
	// answers at once, as a model with nothing to save would, instead of
	// making n terminal calls of its own), so extra calls a system makes
	// cannot shift the script.
	urls := map[int]string{}
	for _, n := range []int{short, k} {
		srv := llmtest.New()
		srv.NoRecord = true
		srv.SetRoute(script(n))
		defer srv.Close()
		urls[n] = srv.URL
	}
	// The floor asks what the agent asks: its system prompt and tool list,
	// taken from the request of a turn the agent makes first, with the
	// answer streamed; the model server's cost of reading a longer request
	// and streaming its answer is not the agent's. The bare floor (a tiny
	// request, the answer in one piece) is reported beside it.
	sysMsg, tools, err := agentRequest(hermesBin, filepath.Join(root, "capture"), sandbox)
	if err != nil {
		return err
	}

	systems := []system{
		{name: "floor", turn: floorTurn(filepath.Join(root, "floor"), sysMsg, tools, true)},
		{name: "bare floor", turn: floorTurn(filepath.Join(root, "bare"), nil, nil, false)},
		{name: "hermes (Go)", turn: hermesTurn(hermesBin, filepath.Join(root, "go"), sandbox, nil)},
	}
	if beforeBin != "" {
		systems = append(systems, system{name: "hermes (before)", turn: hermesTurn(beforeBin, filepath.Join(root, "before"), sandbox, nil)})
	}
	if pythonBin != "" {
		systems = append(systems, system{name: "Python Hermes Agent", turn: pythonTurn(pythonBin, filepath.Join(root, "py"), nil)})
	}
	// Warm-up: homes made, caches filled.
	for _, s := range systems {
		for _, n := range []int{short, k} {
			if err := s.turn(n, urls[n]); err != nil {
				return fmt.Errorf("%s, warm-up turn of %d calls: %w", s.name, n, err)
			}
		}
	}
	times := map[string]map[int][]time.Duration{}
	cpu := map[string]map[int][]time.Duration{} // of the systems' processes; of the floor's commands
	for rep := range reps {
		for _, s := range systems {
			for _, n := range []int{short, k} {
				start := time.Now()
				lastCPU = 0
				before := childrenCPU()
				if err := s.turn(n, urls[n]); err != nil {
					return fmt.Errorf("%s, rep %d, turn of %d calls: %w", s.name, rep, n, err)
				}
				if times[s.name] == nil {
					times[s.name] = map[int][]time.Duration{}
				}
				times[s.name][n] = append(times[s.name][n], time.Since(start))
				if cpu[s.name] == nil {
					cpu[s.name] = map[int][]time.Duration{}
				}
				if strings.HasSuffix(s.name, "floor") {
					lastCPU = childrenCPU() - before // its commands
				}
				cpu[s.name][n] = append(cpu[s.name][n], lastCPU)
				// What the turn left to the kernel to write back is
				// written now, outside any timing: else the next system's
				// fsyncs wait behind it (the Python agent's turns leave
				// the most).
				syscall.Sync()
			}
		}
	}
	fmt.Printf("turns of %d and %d sequential terminal calls, %d interleaved runs each, medians:\n", short, k, reps)
	per := map[string]time.Duration{}
	for _, s := range systems {
		m1, mk := median(times[s.name][short]), median(times[s.name][k])
		per[s.name] = (mk - m1) / time.Duration(k-short)
		fmt.Printf("  %-20s %d calls %9s   %d calls %9s   per extra call %8s", s.name, short, round(m1), k, round(mk), round(per[s.name]))
		if c1, ck := median(cpu[s.name][short]), median(cpu[s.name][k]); ck > 0 {
			fmt.Printf("   CPU per extra call %8s", round((ck-c1)/time.Duration(k-short)))
		}
		fmt.Println()
	}
	g := per["hermes (Go)"]
	fmt.Printf("hermes per extra call: %.2f× the floor (%.2f× the bare floor)", ratio(g, per["floor"]), ratio(g, per["bare floor"]))
	if b, ok := per["hermes (before)"]; ok {
		fmt.Printf(", %.2f× the earlier build", ratio(g, b))
	}
	if p, ok := per["Python Hermes Agent"]; ok {
		fmt.Printf(", %.3f× the Python Hermes Agent", ratio(g, p))
	}
	fmt.Println()

	if !straceOn {
		return nil
	}
	if _, err := exec.LookPath("strace"); err != nil {
		return errors.New("-strace: no strace on PATH (apt-get install strace)")
	}
	fmt.Printf("syscalls per extra call (strace -f -c of one turn of %d and of %d calls):\n", short, k)
	for _, s := range systems {
		if strings.HasSuffix(s.name, "floor") {
			continue // in this process: not straced
		}
		var counts [2]map[string][2]int
		for i, n := range []int{short, k} {
			out := filepath.Join(root, fmt.Sprintf("strace-%d.txt", n))
			var turn func(int, string) error
			wrap := []string{"strace", "-f", "-o", out}
			switch s.name {
			case "hermes (Go)":
				turn = hermesTurn(hermesBin, filepath.Join(root, "go"), sandbox, wrap)
			case "hermes (before)":
				turn = hermesTurn(beforeBin, filepath.Join(root, "before"), sandbox, wrap)
			default:
				turn = pythonTurn(pythonBin, filepath.Join(root, "py"), wrap)
			}
			if err := turn(n, urls[n]); err != nil {
				return fmt.Errorf("%s under strace: %w", s.name, err)
			}
			if counts[i], err = countSyscalls(out); err != nil {
				return err
			}
			if keep != "" {
				if err := copyFile(out, filepath.Join(keep, fmt.Sprintf("strace-%s-%d.txt", slug(s.name), n))); err != nil {
					return err
				}
			}
		}
		d := func(name string, field int) float64 {
			return float64(counts[1][name][field]-counts[0][name][field]) / float64(k-short)
		}
		fmt.Printf("  %-20s fsync %.1f  fdatasync %.1f  rename %.1f  unlink %.1f  openat %.1f  all %.1f  failing %.1f",
			s.name, d("fsync", 0), d("fdatasync", 0), d("rename", 0)+d("renameat", 0)+d("renameat2", 0), d("unlink", 0)+d("unlinkat", 0), d("openat", 0), d("*", 0), d("*", 1))
		var fails []string
		for name := range counts[1] {
			if name == "*" {
				continue
			}
			if v := d(name, 1); v >= 0.5 {
				fails = append(fails, fmt.Sprintf("%s %.1f", name, v))
			}
		}
		sort.Strings(fails)
		if len(fails) > 0 {
			fmt.Printf(" (%s)", strings.Join(fails, ", "))
		}
		fmt.Println()
	}
	return nil
}

// floorTurn is the least a turn of n tool calls can cost: n+1 HTTP round
// trips to the model, and for each call a fork and exec of its command
// with output captured and one fsync of an appended record. With a system
// prompt and tools the requests carry them (the agent's), and streamed
// asks for the answer as a stream, read to its end, as the agent does.
func floorTurn(dir string, system any, tools []any, streamed bool) func(n int, url string) error {
	client := &http.Client{}
	if tools == nil {
		tools = []any{map[string]any{"type": "function", "function": map[string]any{"name": "terminal", "parameters": map[string]any{"type": "object"}}}}
	}
	return func(n int, url string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer log.Close()
		// The request carries the turn so far, as an agent's does: the
		// user message, then one assistant call and one result per step.
		var msgs []any
		if system != nil {
			msgs = append(msgs, system)
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": "go"})
		for i := 0; ; i++ {
			req := map[string]any{"model": "gpt-test", "messages": msgs, "tools": tools}
			if streamed {
				req["stream"], req["stream_options"] = true, map[string]any{"include_usage": true}
			}
			body, _ := json.Marshal(req)
			resp, err := client.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			answer, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			// The script's call is "echo step i" while it makes calls (a
			// streamed answer holds it in pieces).
			if !bytes.Contains(answer, []byte(`"name":"terminal"`)) {
				if i != n {
					return fmt.Errorf("the model answered after %d calls, want %d", i, n)
				}
				return nil
			}
			command := fmt.Sprintf("echo step %d", i)
			cmd := exec.Command("/bin/bash", "-c", command)
			cmd.Dir = dir
			var output bytes.Buffer
			cmd.Stdout, cmd.Stderr = &output, &output
			if err := cmd.Run(); err != nil {
				return err
			}
			args, _ := json.Marshal(map[string]any{"command": command})
			msgs = append(msgs, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": fmt.Sprint("c", i), "type": "function",
				"function": map[string]any{"name": "terminal", "arguments": string(args)}}}},
				map[string]any{"role": "tool", "tool_call_id": fmt.Sprint("c", i), "content": output.String()})
			if _, err := log.Write(append(output.Bytes(), '\n')); err != nil {
				return err
			}
			if err := log.Sync(); err != nil {
				return err
			}
		}
	}
}

// script is the scripted model of a turn of n calls (see run).
func script(n int) func(r llmtest.Request) *llmtest.Reply {
	return func(r llmtest.Request) *llmtest.Reply {
		if _, tools := r.Body["tools"]; !tools {
			return &llmtest.Reply{Content: "done"}
		}
		msgs, _ := r.Body["messages"].([]any)
		results, asked := 0, false
		for _, m := range msgs {
			switch role, _ := m.(map[string]any)["role"].(string); role {
			case "user":
				content, _ := m.(map[string]any)["content"].(string)
				results, asked = 0, content == "go"
			case "tool":
				results++
			}
		}
		if !asked || results >= n {
			return &llmtest.Reply{Content: "done"}
		}
		args, _ := json.Marshal(map[string]any{"command": fmt.Sprintf("echo step %d", results)})
		// Each call its own id: the server names calls by the requests it
		// recorded, none here, and the Python agent keeps one result per
		// id (it looped to its iteration limit on "step 1").
		return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("call_%d", results), Name: "terminal", Args: string(args)}}}
	}
}

// agentRequest runs one turn of the agent and returns the system message
// and the tools of its first model request.
func agentRequest(bin, dir, sandbox string) (any, []any, error) {
	srv := llmtest.New()
	defer srv.Close()
	srv.SetRoute(script(1))
	if err := hermesTurn(bin, dir, sandbox, nil)(1, srv.URL); err != nil {
		return nil, nil, fmt.Errorf("the turn whose request the floor copies: %w", err)
	}
	for _, r := range srv.Requests() {
		tools, _ := r.Body["tools"].([]any)
		msgs, _ := r.Body["messages"].([]any)
		if len(tools) == 0 || len(msgs) == 0 {
			continue
		}
		if m, _ := msgs[0].(map[string]any); m["role"] == "system" {
			return m, tools, nil
		}
		return nil, tools, nil
	}
	return nil, nil, errors.New("the agent's turn made no request with tools")
}

// noReview is the config both agents run with: the learning loop's
// background review (after a turn with many tool calls) is off, as it is a
// cost of the turn, not of each call, and it falls only on the long turn.
const noReview = "skills:\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 0\n"

// hermesTurn runs `hermes chat -q` in a home of its own.
func hermesTurn(bin, dir, sandbox string, wrap []string) func(n int, url string) error {
	return func(n int, url string) error {
		home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(home, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(noReview), 0o644); err != nil {
			return err
		}
		args := append(wrap, bin, "--home", home, "chat", "-q", "go", "--model", "gpt-test", "--yolo", "--sandbox", sandbox)
		return runIn(work, []string{"HOME=" + dir, "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-bench"}, args)
	}
}

// pythonTurn runs the Python Hermes Agent's `hermes chat -q` with a home
// whose config.yaml points at the scripted model.
func pythonTurn(bin, dir string, wrap []string) func(n int, url string) error {
	return func(n int, url string) error {
		home, work := filepath.Join(dir, "n"+strconv.Itoa(n)), filepath.Join(dir, "work")
		if err := os.MkdirAll(filepath.Join(home, ".hermes"), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		cfg := fmt.Sprintf("model:\n  default: gpt-test\n  provider: custom\n  base_url: %s/v1\n", url) + noReview
		if err := os.WriteFile(filepath.Join(home, ".hermes", "config.yaml"), []byte(cfg), 0o644); err != nil {
			return err
		}
		args := append(wrap, bin, "chat", "-q", "go", "--yolo", "-Q")
		return runIn(work, []string{"HOME=" + home, "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-bench"}, args)
	}
}

func runIn(dir string, env, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	for _, k := range []string{"HERMES_CPUPROFILE", "HERMES_CPUPROFILE_HZ", "HERMES_TRACE"} {
		if v := os.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v) // with %p in the path, a profile per turn
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 2000))
	}
	lastCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if !strings.Contains(out.String(), "done") {
		return fmt.Errorf("%s: no final answer in its output:\n%s", strings.Join(args, " "), tail(out.String(), 2000))
	}
	return nil
}

// childrenCPU is the CPU time of this process's children waited for so
// far (the floor's commands).
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lastCPU is the CPU time of the process runIn ran last, with the
// descendants it waited for (the sandbox's init, which waits for the
// commands).
var lastCPU time.Duration

var (
	callRE   = regexp.MustCompile(`^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]`)
	execRE   = regexp.MustCompile(`^(\d+)\s+execve\("/bin/bash"`)
	failedRE = regexp.MustCompile(`= -1 E[A-Z]+`)
)

// countSyscalls reads an strace -f log: per syscall name, [calls,
// failures], with "*" for the totals; a call that was split over two lines
// (unfinished/resumed) counts once. Failures in the command's own bash are
// not counted (the floor runs the same bash), nor EAGAIN: it is how
// non-blocking I/O and Go's runtime wait (a read before data came, a futex
// whose value moved), not a probe that failed.
func countSyscalls(path string) (map[string][2]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	bash := map[string]bool{}
	for _, l := range lines {
		if m := execRE.FindStringSubmatch(l); m != nil {
			bash[m[1]] = true
		}
	}
	c := map[string][2]int{}
	for _, l := range lines {
		m := callRE.FindStringSubmatch(l)
		if m == nil || strings.HasSuffix(l, "<unfinished ...>") {
			continue
		}
		v, all := c[m[2]], c["*"]
		v[0]++
		all[0]++
		if f := failedRE.FindString(l); f != "" && f != "= -1 EAGAIN" && !(m[2] == "futex" && f == "= -1 ETIMEDOUT") && !bash[m[1]] {
			v[1]++
			all[1]++
		}
		c[m[2]], c["*"] = v, all
	}
	return c, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func round(d time.Duration) time.Duration {
	if d > 100*time.Millisecond || d < -100*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// copyFile copies src to dst (the directory is made).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// slug is name in lower case with runs of other characters as one dash.
func slug(name string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
}
