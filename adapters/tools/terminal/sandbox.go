package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/sandbox"
)

// Sandboxes gives each session of the local backend a sandbox of its own
// (package sandbox): every command of the terminal, background or not,
// every execute_code script and every cron script of the session runs in
// it, so what they may touch is decided by the kernel, not by the judge.
// The sandbox starts with a session's first command and ends with the
// session (tool.SessionValues.Close), with Close, or after Idle without
// a command running in it (its /tmp is kept for the session: the next
// command starts a new sandbox over the same /tmp), so that a gateway
// keeps an init only for sessions that are at work.
type Sandboxes struct {
	// Policy is the base policy; each session's working directory is
	// added to its writable roots.
	Policy sandbox.Policy
	// Env names the variables a command may receive beyond
	// sandbox.DefaultEnv (terminal.env_passthrough, sandbox.env; a
	// trailing * matches a prefix).
	Env []string
	Log zerolog.Logger
	// Idle ends a session's sandbox after this long without a command
	// running in it (0: 10 minutes; negative: never).
	Idle time.Duration
	// WarmIdle drops the shell started ahead for a session's next command
	// (warm.go) when no command came for this long (0: 30 seconds).
	WarmIdle time.Duration

	mu     sync.Mutex
	all    map[*sessionSandbox]struct{}
	closed bool
	// warmRuns counts the commands a warm shell ran (warm.go).
	warmRuns atomic.Int64
}

// sessionSandbox is one session's sandbox; it restarts when its init
// died (killed, out of memory).
type sessionSandbox struct {
	owner *Sandboxes
	mu    sync.Mutex
	sb    *sandbox.Sandbox
	dir   string
	// tmp is the session's /tmp, kept across sandboxes of the session.
	tmp  string
	idle *time.Timer
	// warm is the shell started ahead for the session's next command
	// (warm.go); warming is closed when the one being started is ready.
	warm    *warmShell
	warming chan struct{}
	// warmStarts counts the warm shells started in sb, which are not
	// commands started for the idle watch.
	warmStarts uint64
}

// Close implements io.Closer for tool.SessionValues.
func (s *sessionSandbox) Close() error {
	s.mu.Lock()
	sb, tmp, warm := s.sb, s.tmp, s.warm
	s.sb, s.tmp, s.warm = nil, "", nil
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	if warm != nil {
		warm.drop()
	}
	s.owner.mu.Lock()
	delete(s.owner.all, s)
	s.owner.mu.Unlock()
	var err error
	if sb != nil {
		err = sb.Close()
	}
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	return err
}

// watch ends sb once it has been idle for d: checked every d, it ends
// when no command started in it since the last look and none runs now (a
// warm shell waiting for one does not count).
func (s *sessionSandbox) watch(sb *sandbox.Sandbox, d time.Duration) {
	var last uint64
	var check func()
	check = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sb != sb {
			return
		}
		running := sb.Running()
		if s.warm != nil && s.warm.sb == sb {
			running--
		}
		if n := sb.Started() - s.warmStarts; s.warming != nil || running > 0 || n != last {
			last = n
			s.idle = time.AfterFunc(d, check)
			return
		}
		s.sb = nil
		if s.warm != nil {
			s.warm.cmd.Close()
			s.warm = nil
		}
		go sb.Close()
	}
	last = sb.Started() - s.warmStarts
	s.idle = time.AfterFunc(d, check)
}

// For returns the sandbox of ctx's session, starting it when needed.
func (s *Sandboxes) For(ctx context.Context) (*sandbox.Sandbox, error) {
	_, sb, err := s.forSession(ctx)
	return sb, err
}

// forSession is For with the session's sandbox record.
func (s *Sandboxes) forSession(ctx context.Context) (*sessionSandbox, *sandbox.Sandbox, error) {
	env := tool.EnvFrom(ctx)
	ss := env.Values.Get("terminal.sandbox", func() any { return &sessionSandbox{owner: s} }).(*sessionSandbox)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.sb != nil && ss.sb.Alive() && ss.dir == env.WorkingDir {
		if !ss.sb.Stale() {
			return ss, ss.sb, nil
		}
		s.Log.Warn().Msg("sandbox: a hidden path appeared (a new credential store?); the session's sandbox starts again to hide it, ending its background processes")
	}
	if ss.warm != nil {
		ss.warm.cmd.Close()
		ss.warm = nil
	}
	if ss.sb != nil {
		ss.sb.Close()
		ss.sb = nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, errors.New("hermes is shutting down; no new commands")
	}
	if s.all == nil {
		s.all = map[*sessionSandbox]struct{}{}
	}
	s.all[ss] = struct{}{}
	s.mu.Unlock()
	if ss.tmp == "" {
		tmp, err := os.MkdirTemp("", "hermes-sandbox-")
		if err != nil {
			return nil, nil, err
		}
		ss.tmp = tmp
	}
	p := s.Policy
	p.Tmp = ss.tmp
	p.Writable = append([]string(nil), p.Writable...)
	// A working directory that cannot be a workspace (/, a system
	// directory: a service's default) stays read-only; commands still run
	// there.
	if env.WorkingDir != "" {
		if err := sandbox.CheckWritable(env.WorkingDir, p.Home); err == nil {
			p.Writable = append(p.Writable, env.WorkingDir)
		} else {
			s.Log.Warn().Str("dir", env.WorkingDir).Msg("sandbox: the working directory is not writable: " + err.Error())
		}
	}
	sb, err := sandbox.Start(ctx, p, sandbox.Options{Log: s.Log})
	if err != nil {
		return nil, nil, err
	}
	ss.sb, ss.dir, ss.warmStarts = sb, env.WorkingDir, 0
	if idle := s.Idle; idle >= 0 {
		if idle == 0 {
			idle = 10 * time.Minute
		}
		if ss.idle != nil {
			ss.idle.Stop()
		}
		ss.watch(sb, idle)
	}
	return ss, sb, nil
}

// Close ends every sandbox, with everything running in them.
func (s *Sandboxes) Close() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*sessionSandbox, 0, len(s.all))
	for ss := range s.all {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var errs []error
	for _, ss := range all {
		errs = append(errs, ss.Close())
	}
	return errors.Join(errs...)
}

// Environ is the environment a sandboxed command gets out of environ:
// only the variables sandbox.DefaultEnv and Env name, and TMPDIR=/tmp.
func (s *Sandboxes) Environ(environ []string) []string {
	return append(sandbox.FilterEnv(environ, s.Env), "TMPDIR=/tmp")
}

// running is a command started by a backend or in a sandbox.
type running interface {
	// wait returns the exit code (128+n after signal n); an error only
	// when the command could not run to its end.
	wait() (int, error)
	kill()
	pid() int
	done() <-chan struct{}
}

// start starts command in dir, its output into out: in the session's
// sandbox when the local backend has one, else as the backend's process.
// A background command outlives ctx.
func (c Config) start(ctx context.Context, dir, command string, out io.Writer, background bool) (running, error) {
	if _, local := c.Backend.(Local); local && c.Sandboxes != nil {
		ss, sb, err := c.Sandboxes.forSession(ctx)
		if err != nil {
			return nil, err
		}
		sctx := ctx
		if background {
			sctx = context.WithoutCancel(ctx)
		}
		if dir == "" {
			dir, _ = os.Getwd()
		}
		env := c.Sandboxes.Environ(c.Env())
		warm := !background && warmable(c.Shell, command)
		var p *sandbox.Process
		if warm {
			if w := ss.takeWarm(ctx, sb, dir, env); w != nil {
				if p, err = w.run(command, out); err == nil {
					c.Sandboxes.warmRuns.Add(1)
				}
			}
		}
		if p == nil {
			if p, err = sb.Start(sctx, sandbox.Cmd{Args: []string{c.Shell, "-c", command}, Dir: dir,
				Env: env, Stdout: out, Stderr: out}); err != nil {
				return nil, err
			}
		}
		if warm {
			// The shell of the session's next command starts once this
			// one has ended, while the model reads what it printed.
			go func() {
				<-p.Done()
				ss.prepare(sb, c.Shell, dir, env)
			}()
		}
		return sandboxed{p}, nil
	}
	if background {
		ctx = context.WithoutCancel(ctx)
	}
	cmd := c.command(ctx, dir, command)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, out, nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	e := &execed{cmd: cmd, ch: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.ch)
	}()
	return e, nil
}

type sandboxed struct{ p *sandbox.Process }

func (s sandboxed) wait() (int, error)    { return s.p.Wait() }
func (s sandboxed) kill()                 { s.p.Kill() }
func (s sandboxed) pid() int              { return s.p.Pid() }
func (s sandboxed) done() <-chan struct{} { return s.p.Done() }

type execed struct {
	cmd *exec.Cmd
	ch  chan struct{}
	err error
}

func (e *execed) wait() (int, error) {
	<-e.ch
	var ee *exec.ExitError
	if errors.As(e.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if e.err != nil {
		return -1, e.err
	}
	return 0, nil
}
func (e *execed) kill()                 { killGroup(e.cmd) }
func (e *execed) pid() int              { return e.cmd.Process.Pid }
func (e *execed) done() <-chan struct{} { return e.ch }
