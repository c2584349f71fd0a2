package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// control is a tmux control-mode client: commands go in as lines, and the
// output of every pane comes back as %output notifications the moment tmux
// reads it from the pane — so a measurement waits on events, not on
// polling the screen.
type control struct {
	tb      testing.TB
	cmd     *exec.Cmd
	in      io.WriteCloser
	output  chan paneOutput
	replies chan string
}

type paneOutput struct {
	pane string
	data string
	at   time.Time
}

func newControl(tb testing.TB, env []string, dir string) *control {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		tb.Skip("tmux is not installed (apt-get install tmux): the screen benchmarks run the chat in tmux panes")
	}
	sock := filepath.Join(tb.TempDir(), "tmux.sock")
	start := exec.Command("tmux", "-u", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", dir,
		"env -i "+strings.Join(quoteAll(env), " ")+" sh")
	if out, err := start.CombinedOutput(); err != nil {
		tb.Fatalf("tmux: %v %s", err, out)
	}
	tb.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	c := &control{tb: tb, output: make(chan paneOutput, 4096), replies: make(chan string, 16)}
	c.cmd = exec.Command("tmux", "-u", "-S", sock, "-C", "attach", "-t", "t")
	c.in, _ = c.cmd.StdinPipe()
	out, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.in.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	go c.read(out)
	select { // the attach's own reply comes first
	case <-c.replies:
	case <-time.After(30 * time.Second):
		tb.Fatal("tmux control mode did not start")
	}
	c.send("refresh-client -C 120x40")
	return c
}

// read parses the client's output: %output lines become paneOutput, the
// body of each %begin/%end block a reply.
func (c *control) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var body []string
	inBlock := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "%output "):
			f := strings.SplitN(line, " ", 3)
			if len(f) == 3 {
				c.output <- paneOutput{pane: f[1], data: f[2], at: time.Now()}
			}
		case strings.HasPrefix(line, "%begin"):
			inBlock, body = true, nil
		case strings.HasPrefix(line, "%end") || strings.HasPrefix(line, "%error"):
			inBlock = false
			select {
			case c.replies <- strings.Join(body, "\n"):
			default:
			}
		case inBlock:
			body = append(body, line)
		}
	}
}

// send runs a tmux command and returns its reply.
func (c *control) send(command string) string {
	c.tb.Helper()
	if _, err := fmt.Fprintln(c.in, command); err != nil {
		c.tb.Fatal(err)
	}
	select {
	case r := <-c.replies:
		return r
	case <-time.After(30 * time.Second):
		c.tb.Fatalf("tmux did not answer %q", command)
		return ""
	}
}

// drain forgets the output received so far.
func (c *control) drain() {
	for {
		select {
		case <-c.output:
		default:
			return
		}
	}
}

// waitOutput waits until pane writes something containing text and
// returns when tmux read it.
func (c *control) waitOutput(pane, text string) time.Time {
	c.tb.Helper()
	return c.waitOutputs(pane, text)[0]
}

// waitOutputs waits until pane wrote each of texts and returns when tmux
// read each (in the order of texts, whatever order they came in).
func (c *control) waitOutputs(pane string, texts ...string) []time.Time {
	c.tb.Helper()
	timeout := time.After(60 * time.Second)
	var seen strings.Builder
	at := make([]time.Time, len(texts))
	left := len(texts)
	for {
		select {
		case o := <-c.output:
			if o.pane != pane {
				continue
			}
			seen.WriteString(o.data)
			for i, t := range texts {
				if at[i].IsZero() && strings.Contains(seen.String(), t) {
					at[i] = o.at
					left--
				}
			}
			if left == 0 {
				return at
			}
		case <-timeout:
			c.tb.Fatalf("pane %s never wrote all of %q; it wrote:\n%.3000s", pane, texts, seen.String())
		}
	}
}

// window starts command in a new window and returns its pane id.
func (c *control) window(command string) string {
	c.tb.Helper()
	return strings.TrimSpace(c.send("new-window -d -P -F '#{pane_id}' " + shellQuote(command)))
}

func (c *control) kill(pane string) { c.send("kill-pane -t " + pane) }

// shellQuote quotes s as one word for tmux's command parser.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// percentiles reports p50 and p99 of ds in milliseconds.
func percentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkChatScreen measures, in one run and through the same tmux:
// chat -q from start to its answer (the baseline), the interactive chat
// from start to its editor and to ready (its session taken), and keystroke-to-echo in the chat's editor
// beside the same in cat (the terminal's own echo: the floor).
//
//	go test -run '^$' -bench ChatScreen -benchtime 20x ./cmd/hermes/
func BenchmarkChatScreen(b *testing.B) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "pong"})
	defer srv.Close()
	home, wd := b.TempDir(), b.TempDir()
	env := screenEnv(srv)
	c := newControl(b, env, wd)
	// Windows run with exactly env (tmux would give them its own).
	chat := fmt.Sprintf("env -i %s %s --home %s chat --model m", strings.Join(quoteAll(env), " "), bin, home)
	// The home's databases exist before anything is measured.
	pane := c.window(chat + " -q warm; sleep 600")
	c.waitOutput(pane, "pong")
	c.kill(pane)

	b.Run("oneshot-q-start-to-answer", func(b *testing.B) {
		var ds []time.Duration
		for range b.N {
			c.drain()
			start := time.Now()
			pane := c.window(chat + " -q ping; sleep 600")
			ds = append(ds, c.waitOutput(pane, "pong").Sub(start))
			c.kill(pane)
		}
		percentiles(b, ds)
	})
	// The editor shows first; the chat is ready when its session is
	// taken and the banner names it.
	b.Run("screen-start-to-ready", func(b *testing.B) {
		var ds, editor []time.Duration
		for range b.N {
			c.drain()
			start := time.Now()
			pane := c.window(chat)
			at := c.waitOutputs(pane, "(/help for commands)", "Hermes · m · session")
			editor = append(editor, at[0].Sub(start))
			ds = append(ds, at[1].Sub(start))
			c.kill(pane)
		}
		percentiles(b, ds)
		slices.Sort(editor)
		b.ReportMetric(float64(editor[len(editor)/2].Microseconds())/1000, "editor-p50-ms")
	})
	keys := func(b *testing.B, command, ready string) {
		pane := c.window(command)
		c.waitOutput(pane, ready)
		time.Sleep(200 * time.Millisecond)
		letters := "qzjkxwvy"
		var ds []time.Duration
		b.ResetTimer()
		for i := range b.N {
			if i > 0 && i%40 == 0 {
				b.StopTimer()
				c.send("send-keys -t " + pane + " C-u")
				time.Sleep(100 * time.Millisecond)
				b.StartTimer()
			}
			c.drain()
			k := string(letters[i%len(letters)])
			start := time.Now()
			c.send("send-keys -t " + pane + " -l " + k)
			ds = append(ds, c.waitOutput(pane, k).Sub(start))
		}
		b.StopTimer()
		if os.Getenv("HERMES_BENCH_DEBUG") != "" {
			b.Logf("%v", ds)
		}
		percentiles(b, ds)
		c.kill(pane)
	}
	b.Run("screen-keystroke-to-echo", func(b *testing.B) { keys(b, chat, "Hermes · m · session") })
	b.Run("cat-keystroke-to-echo", func(b *testing.B) { keys(b, "printf ready; cat", "ready") })
	os.RemoveAll(home)
}
