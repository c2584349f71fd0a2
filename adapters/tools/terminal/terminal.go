// Package terminal is the terminal tool (run a shell command in the
// session's working directory, with a timeout and an output cap that keeps
// head and tail), the process tool for background commands, and the
// approval of dangerous commands on the local backend.
//
// Commands run with an environment stripped of the keys Hermes holds
// (provider and platform keys, tokens, passwords: see package secrets),
// and background commands end with Hermes: Close kills what is still
// running.
package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/secrets"
)

// Config tunes the terminal.
type Config struct {
	// Timeout is the default per command; a call may ask for less or more
	// up to MaxTimeout.
	Timeout    time.Duration
	MaxTimeout time.Duration
	// MaxOutput bounds what the model reads of a command's output; the
	// middle is elided.
	MaxOutput int
	Shell     string
	Approver  *Approver
	// Backend runs commands; nil is the local one.
	Backend Backend
	// Env is the environment of commands, and of the ssh and docker
	// clients; nil: this process's environment without its secrets.
	Env func() []string
	// Sandboxes, when set, runs the local backend's commands in a kernel
	// sandbox per session (see Sandboxes); nil runs them unconfined
	// (sandbox.mode: full-access).
	Sandboxes *Sandboxes
}

// Backend runs a shell command somewhere.
type Backend interface {
	// Name is local, ssh or docker.
	Name() string
	// Command prepares cmd to run command in dir.
	Command(ctx context.Context, shell, dir, command string) *exec.Cmd
	// Checked tells whether dangerous commands need approval here: a
	// container is its own boundary.
	Checked() bool
}

// Local runs commands on this machine.
type Local struct{}

func (Local) Name() string  { return "local" }
func (Local) Checked() bool { return true }
func (Local) Command(_ context.Context, shell, dir, command string) *exec.Cmd {
	c := exec.Command(shell, "-c", command)
	c.Dir = dir
	return c
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 180 * time.Second
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 30 * time.Minute
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = 50_000
	}
	if c.Shell == "" {
		c.Shell = "/bin/bash"
		if _, err := os.Stat(c.Shell); err != nil {
			c.Shell = "/bin/sh"
		}
	}
	if c.Backend == nil {
		c.Backend = Local{}
	}
	if c.Approver == nil {
		c.Approver = &Approver{}
	}
	if c.Env == nil {
		keep := secrets.New(os.Environ(), nil, nil)
		c.Env = func() []string { return keep.Env(os.Environ()) }
	}
	return c
}

// command prepares a command of the backend with the scrubbed environment.
func (c Config) command(ctx context.Context, dir, command string) *exec.Cmd {
	cmd := c.Backend.Command(ctx, c.Shell, dir, command)
	if cmd.Env == nil {
		cmd.Env = c.Env()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Tools returns terminal and process. They share the table of background
// processes: Close on the terminal ends them all.
func Tools(c Config) []tool.Tool {
	c = c.withDefaults()
	j := &jobs{procs: map[*proc]struct{}{}}
	return []tool.Tool{&Terminal{cfg: c, jobs: j}, &Process{cfg: c}}
}

// Terminal is the terminal tool.
type Terminal struct {
	cfg  Config
	jobs *jobs
}

func (t *Terminal) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "Run a shell command in the working directory and return its output and exit code. Set background=true for long-running programs (servers, watchers) and manage them with the process tool.",
		Parameters: map[string]any{"type": "object", "required": []string{"command"}, "properties": map[string]any{
			"command":    map[string]any{"type": "string"},
			"background": map[string]any{"type": "boolean"},
			"timeout":    map[string]any{"type": "integer", "description": "seconds (default 180)"},
			"workdir":    map[string]any{"type": "string", "description": "directory to run in (default: the working directory)"},
		}}}
}
func (t *Terminal) Flags() tool.Flags { return tool.Flags{} }

// Run implements tool.Tool.
func (t *Terminal) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Command    string `json:"command"`
		Background bool   `json:"background"`
		Timeout    int    `json:"timeout"`
		Workdir    string `json:"workdir"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("command is empty")
	}
	env := tool.EnvFrom(ctx)
	if t.cfg.Backend.Checked() {
		if err := t.cfg.Approver.Approve(ctx, a.Command); err != nil {
			return "", err
		}
	}
	dir := env.WorkingDir
	if a.Workdir != "" {
		dir = a.Workdir
		if !strings.HasPrefix(dir, "/") && env.WorkingDir != "" {
			dir = env.WorkingDir + "/" + dir
		}
	}
	if a.Background {
		return startBackground(ctx, t.cfg, t.jobs, dir, a.Command)
	}
	timeout := t.cfg.Timeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, t.cfg.MaxTimeout)
	}
	out := &Capped{Max: t.cfg.MaxOutput}
	var w io.Writer = out
	// A front end that shows the output live (an editor's terminal) gets
	// a copy; the command runs here all the same.
	var gone <-chan struct{}
	code := 130
	if m, ok := env.Asker.(tool.TerminalMirror); ok {
		if view, err := m.MirrorTerminal(ctx, a.Command, dir); err == nil && view != nil {
			w, gone = io.MultiWriter(out, view), view.Gone()
			defer func() { view.Close(code) }()
		}
	}
	r, err := t.cfg.start(ctx, dir, a.Command, w, false)
	if err != nil {
		code = 127
		return "", err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cut string
	select {
	case <-r.done():
	case <-timer.C:
		r.kill()
		cut = fmt.Sprintf("[command timed out after %s and was killed]", timeout)
	case <-gone:
		r.kill()
		cut = "[the command was stopped in the editor's terminal]"
	case <-ctx.Done():
		r.kill()
		r.wait()
		return out.String(), ctx.Err()
	}
	code, err = r.wait()
	if err != nil {
		return out.String(), err
	}
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	if cut != "" {
		return text + "\n" + cut, errors.New(cut[1 : len(cut)-1])
	}
	return fmt.Sprintf("%s\n[exit code: %d]", strings.TrimRight(text, "\n"), code), nil
}

// killGroup kills the command and everything it started.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Capped keeps the first and last halves of at most Max bytes of output
// and counts what it dropped from the middle. It is safe for concurrent
// writers (stdout and stderr of one process).
type Capped struct {
	mu      sync.Mutex
	Max     int
	head    []byte
	tail    []byte
	dropped int
}

func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	half := c.Max / 2
	if room := half - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - half; over > 0 {
		c.dropped += over
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

// String is the kept output, with a marker where the middle was elided.
func (c *Capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return string(c.head) + string(c.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes of output elided …]\n%s", c.head, c.dropped, c.tail)
}

// --- background processes ---

type proc struct {
	id      string
	command string
	r       running
	done    chan struct{}
	code    int
	started time.Time
	polled  int // bytes of output already returned by poll
	buf     *bytes.Buffer
	mu      sync.Mutex
}

type procTable struct {
	mu    sync.Mutex
	next  int
	procs map[string]*proc
}

// Close kills the session's background processes (the session ended).
func (t *procTable) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pr := range t.procs {
		pr.r.kill()
	}
	return nil
}

func procsOf(env *tool.Env) *procTable {
	return env.Values.Get("terminal.procs", func() any { return &procTable{procs: map[string]*proc{}} }).(*procTable)
}

// lockedBuffer is the full output of a background process.
type lockedBuffer struct {
	p *proc
}

func (l lockedBuffer) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.p.buf.Len() < 4<<20 {
		l.p.buf.Write(b)
	}
	return len(b), nil
}

// jobs are the background processes started through one terminal tool,
// whatever their session, so that they can be ended with Hermes.
type jobs struct {
	mu     sync.Mutex
	procs  map[*proc]struct{}
	closed bool
}

func startBackground(ctx context.Context, cfg Config, j *jobs, dir, command string) (string, error) {
	env := tool.EnvFrom(ctx)
	table := procsOf(env)
	// Background processes outlive the call, not Hermes.
	p := &proc{command: command, done: make(chan struct{}), started: time.Now(), buf: &bytes.Buffer{}}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return "", errors.New("hermes is shutting down; no new background processes")
	}
	r, err := cfg.start(ctx, dir, command, lockedBuffer{p}, true)
	if err != nil {
		j.mu.Unlock()
		return "", err
	}
	p.r = r
	j.procs[p] = struct{}{}
	j.mu.Unlock()
	table.mu.Lock()
	table.next++
	p.id = fmt.Sprintf("proc_%d", table.next)
	table.procs[p.id] = p
	table.mu.Unlock()
	go func() {
		p.code, _ = r.wait()
		close(p.done)
		j.mu.Lock()
		delete(j.procs, p)
		j.mu.Unlock()
	}()
	return fmt.Sprintf("started %s (pid %d): %s\nUse process with action=poll to read its output, action=kill to stop it.", p.id, r.pid(), command), nil
}

// Process manages background commands.
type Process struct{ cfg Config }

func (p *Process) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "process", Description: "Manage background commands started with terminal(background=true): list them, poll new output, wait for one to end, or kill one.",
		Parameters: map[string]any{"type": "object", "required": []string{"action"}, "properties": map[string]any{
			"action":  map[string]any{"type": "string", "enum": []string{"list", "poll", "wait", "kill"}},
			"id":      map[string]any{"type": "string"},
			"timeout": map[string]any{"type": "integer", "description": "seconds to wait (action=wait)"},
		}}}
}
func (p *Process) Flags() tool.Flags { return tool.Flags{} }

func (p *Process) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Action  string `json:"action"`
		ID      string `json:"id"`
		Timeout int    `json:"timeout"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	table := procsOf(tool.EnvFrom(ctx))
	table.mu.Lock()
	if a.Action == "list" {
		var ids []string
		for id := range table.procs {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var b strings.Builder
		for _, id := range ids {
			pr := table.procs[id]
			fmt.Fprintf(&b, "%s  %s  %s  %s\n", id, status(pr), time.Since(pr.started).Round(time.Second), pr.command)
		}
		table.mu.Unlock()
		if b.Len() == 0 {
			return "no background processes", nil
		}
		return b.String(), nil
	}
	pr, ok := table.procs[a.ID]
	table.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("no background process %q; action=list shows them", a.ID)
	}
	switch a.Action {
	case "poll":
		return pr.poll(p.cfg.MaxOutput), nil
	case "wait":
		wait := time.Duration(max(a.Timeout, 1)) * time.Second
		select {
		case <-pr.done:
		case <-time.After(wait):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return pr.poll(p.cfg.MaxOutput), nil
	case "kill":
		pr.r.kill()
		select {
		case <-pr.done:
		case <-time.After(5 * time.Second):
		}
		return fmt.Sprintf("killed %s\n%s", pr.id, pr.poll(p.cfg.MaxOutput)), nil
	}
	return "", fmt.Errorf("action must be list, poll, wait or kill, got %q", a.Action)
}

func status(pr *proc) string {
	select {
	case <-pr.done:
		return fmt.Sprintf("exited(%d)", pr.code)
	default:
		return "running"
	}
}

// poll returns output not returned before.
func (pr *proc) poll(max int) string {
	pr.mu.Lock()
	all := pr.buf.Bytes()
	fresh := append([]byte(nil), all[pr.polled:]...)
	pr.polled = len(all)
	pr.mu.Unlock()
	c := &Capped{Max: max}
	c.Write(fresh)
	out := c.String()
	if out == "" {
		out = "(no new output)"
	}
	return fmt.Sprintf("%s [%s]\n%s", pr.id, status(pr), out)
}

// Close ends Hermes' use of the terminal: every background process still
// running, of any session, is killed with its process group (a server
// started with background=true must not outlive Hermes), and the backend
// is closed when it holds something (the docker container).
func (t *Terminal) Close() error {
	t.jobs.mu.Lock()
	t.jobs.closed = true
	running := make([]*proc, 0, len(t.jobs.procs))
	for p := range t.jobs.procs {
		running = append(running, p)
		p.r.kill()
	}
	t.jobs.mu.Unlock()
	deadline := time.After(5 * time.Second)
	for _, p := range running {
		select {
		case <-p.done:
		case <-deadline:
			return fmt.Errorf("background process %d (%s) did not end after SIGKILL", p.r.pid(), p.command)
		}
	}
	var errs []error
	if t.cfg.Sandboxes != nil {
		errs = append(errs, t.cfg.Sandboxes.Close())
	}
	if c, ok := t.cfg.Backend.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// KillAll stops every background process of a session (session end).
func KillAll(env *tool.Env) {
	table := procsOf(env)
	table.mu.Lock()
	defer table.mu.Unlock()
	for _, pr := range table.procs {
		pr.r.kill()
	}
}
