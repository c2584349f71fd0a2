//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// initEnv marks the re-executed program as a sandbox's init.
const initEnv = "HERMES_SANDBOX_INIT"

// message is one datagram on the control socket between Hermes and the
// init. File descriptors travel beside it (SCM_RIGHTS).
type message struct {
	Op string `json:"op"`
	ID int    `json:"id,omitempty"`
	// policy
	Policy *Policy `json:"policy,omitempty"`
	// run
	Args []string `json:"args,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	Env  []string `json:"env,omitempty"`
	// Streams: 1 (stdout and stderr share the one descriptor) or 2;
	// Extra descriptors follow them (the command's 3, 4, …).
	Streams int `json:"streams,omitempty"`
	Extra   int `json:"extra,omitempty"`
	// started / exited / kill
	Pid    int `json:"pid,omitempty"`
	Code   int `json:"code,omitempty"`
	Signal int `json:"signal,omitempty"`
	// error, failed
	Error string `json:"error,omitempty"`
}

// Options are the parts of a sandbox that are not policy.
type Options struct {
	Log zerolog.Logger
	// Dial reaches an allowed host for NetAllow's proxy (nil: net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Sandbox is one running init and the commands it runs. A Sandbox is safe
// for concurrent use; Close ends every command in it.
type Sandbox struct {
	policy Policy
	opts   Options
	init   *exec.Cmd
	ctl    *net.UnixConn
	tmp    string
	ownTmp bool
	cg     *cgroup

	wmu    sync.Mutex // one datagram at a time
	mu     sync.Mutex
	nextID int
	procs  map[int]*Process
	dead   chan struct{} // closed when the init is gone
	err    error         // why, once dead is closed
	closed bool
	// proxies bounds the connections NetAllow's proxy serves at once.
	proxies chan struct{}
	// appear watches the hidden paths that did not exist when the
	// sandbox started (nothing hides them until it starts again).
	appear *appearWatch
}

// Process is a command running in a sandbox.
type Process struct {
	sb      *Sandbox
	id      int
	started chan struct{}
	pid     int
	exited  chan struct{}
	code    int
	signal  int
	err     error
	copies  sync.WaitGroup
	once    sync.Once
}

// Start starts a sandbox with policy p. It fails, saying why and what to
// do, where this kernel cannot enforce it.
func Start(ctx context.Context, p Policy, o Options) (*Sandbox, error) {
	if p.Mode == FullAccess {
		return nil, errors.New("sandbox mode full-access runs commands without a sandbox; there is nothing to start")
	}
	p, err := p.resolved()
	if err != nil {
		return nil, err
	}
	if pr := Probe(); !pr.Enforced() {
		return nil, pr.Refusal()
	}
	sb := &Sandbox{policy: p, opts: o, procs: map[int]*Process{}, dead: make(chan struct{}), proxies: make(chan struct{}, 64)}
	sb.appear = newAppearWatch(p.Hidden)
	if p.Tmp == "" {
		if sb.tmp, err = os.MkdirTemp("", "hermes-sandbox-"); err != nil {
			return nil, err
		}
		sb.ownTmp = true
	} else {
		sb.tmp = p.Tmp
		if err := os.MkdirAll(sb.tmp, 0o700); err != nil {
			return nil, err
		}
	}
	sb.policy.Tmp = sb.tmp
	if err := sb.start(ctx); err != nil {
		sb.cleanup()
		return nil, err
	}
	return sb, nil
}

func (sb *Sandbox) start(ctx context.Context) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox control socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "sandbox-ctl"), os.NewFile(uintptr(fds[1]), "sandbox-ctl-init")
	defer theirs.Close()
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return err
	}
	sb.ctl = fc.(*net.UnixConn)
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if sb.policy.Network != NetOn {
		flags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	var stderr strings.Builder
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"hermes-sandbox-init"},
		Env:        []string{initEnv + "=1"},
		ExtraFiles: []*os.File{theirs},
		Stderr:     &limitedWriter{w: &stderr, n: 8 << 10},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Setsid:                     true,
			Pdeathsig:                  syscall.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		sb.ctl.Close()
		return fmt.Errorf("start the sandbox (user namespaces): %w", err)
	}
	sb.init = cmd
	sb.cg = newCgroup(cmd.Process.Pid, sb.policy.Limits, sb.opts.Log)
	if err := sb.send(message{Op: "policy", Policy: &sb.policy}, nil); err != nil {
		sb.kill()
		return err
	}
	ready := make(chan error, 1)
	go sb.read(ready)
	go func() {
		err := cmd.Wait()
		sb.die(fmt.Errorf("the sandbox ended (%v) %s", err, strings.TrimSpace(stderr.String())))
	}()
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case err := <-ready:
		if err != nil {
			sb.kill()
			<-sb.dead
			return err
		}
		return nil
	case <-sb.dead:
		return sb.err
	case <-t.C:
		sb.kill()
		return errors.New("the sandbox did not start within 20s")
	case <-ctx.Done():
		sb.kill()
		return ctx.Err()
	}
}

// TmpDir is the host directory the sandbox sees as /tmp.
func (sb *Sandbox) TmpDir() string { return sb.tmp }

// Policy is the sandbox's policy, resolved.
func (sb *Sandbox) Policy() Policy { return sb.policy }

// ErrStale is returned by Start once a hidden path appeared after the
// sandbox started: start a new sandbox, which hides it.
var ErrStale = errors.New("a hidden path appeared after the sandbox started (a new credential store?); start a new sandbox")

// Stale reports whether a hidden path appeared since the sandbox started
// (a credential store made by a login): only a new sandbox hides it.
func (sb *Sandbox) Stale() bool { return sb.appear.Stale() }

// Running is how many commands run in the sandbox now.
func (sb *Sandbox) Running() int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return len(sb.procs)
}

// Started is how many commands were started in the sandbox so far.
func (sb *Sandbox) Started() uint64 {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return uint64(sb.nextID)
}

// Alive reports whether the sandbox can still run commands.
func (sb *Sandbox) Alive() bool {
	select {
	case <-sb.dead:
		return false
	default:
		return true
	}
}

func (sb *Sandbox) send(m message, files []*os.File) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	sb.wmu.Lock()
	defer sb.wmu.Unlock()
	if _, _, err := sb.ctl.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("sandbox control: %w", err)
	}
	return nil
}

// read dispatches the init's messages until the socket closes.
func (sb *Sandbox) read(ready chan<- error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*16))
	first := true
	for {
		n, oobn, _, _, err := sb.ctl.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			if first {
				ready <- errors.New("the sandbox closed before it was ready")
			}
			sb.die(errors.New("the sandbox's control socket closed"))
			return
		}
		files := receivedFiles(oob[:oobn])
		var m message
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			closeAll(files)
			continue
		}
		if first {
			first = false
			if m.Op == "error" {
				ready <- errors.New(m.Error)
				return
			}
			ready <- nil
			continue
		}
		switch m.Op {
		case "conn":
			if len(files) == 1 {
				select {
				case sb.proxies <- struct{}{}:
					go func() {
						defer func() { <-sb.proxies }()
						sb.proxy(files[0])
					}()
					continue
				default: // too many at once: refused by closing
				}
			}
		case "started", "failed", "exited":
			sb.mu.Lock()
			p := sb.procs[m.ID]
			if m.Op != "started" {
				delete(sb.procs, m.ID)
			}
			sb.mu.Unlock()
			if p != nil {
				p.event(m)
			}
		}
		closeAll(files)
	}
}

func receivedFiles(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "sandbox-fd"))
		}
	}
	return files
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func (sb *Sandbox) die(err error) {
	sb.mu.Lock()
	select {
	case <-sb.dead:
		sb.mu.Unlock()
		return
	default:
	}
	if sb.closed {
		err = errors.New("the sandbox was closed")
	}
	sb.err = err
	close(sb.dead)
	procs := sb.procs
	sb.procs = map[int]*Process{}
	sb.mu.Unlock()
	for _, p := range procs {
		p.event(message{Op: "failed", Error: err.Error(), Signal: int(syscall.SIGKILL)})
	}
	sb.ctl.Close()
}

func (sb *Sandbox) kill() {
	if sb.init != nil && sb.init.Process != nil {
		sb.init.Process.Signal(syscall.SIGKILL)
	}
}

// Close ends every command of the sandbox (the kernel kills every process
// of a pid namespace whose init ends), then removes its /tmp when the
// sandbox made it.
func (sb *Sandbox) Close() error {
	sb.mu.Lock()
	sb.closed = true
	sb.mu.Unlock()
	sb.kill()
	select {
	case <-sb.dead:
	case <-time.After(10 * time.Second):
		return errors.New("the sandbox's init did not end after SIGKILL")
	}
	sb.cleanup()
	return nil
}

func (sb *Sandbox) cleanup() {
	sb.appear.Close()
	if sb.cg != nil {
		sb.cg.remove()
	}
	if sb.ownTmp && sb.tmp != "" {
		os.RemoveAll(sb.tmp)
	}
}

// Cmd is a command to run in a sandbox.
type Cmd struct {
	// Args is the program and its arguments; a program without a slash is
	// looked up in the sandbox's PATH (from Env).
	Args []string
	// Dir is the working directory, as seen inside.
	Dir string
	// Env is the whole environment of the command.
	Env []string
	// Stdout and Stderr receive the output; the same writer gets both
	// streams through one pipe, in order. Standard input is /dev/null.
	Stdout, Stderr io.Writer
	// ExtraFiles are the command's descriptors 3, 4, … (a socket to
	// Hermes, say); the caller keeps and closes its own copies.
	ExtraFiles []*os.File
}

// Start starts c in the sandbox, in a pid namespace of its own: when its
// first process ends, whatever it left running is killed by the kernel.
func (sb *Sandbox) Start(ctx context.Context, c Cmd) (*Process, error) {
	if len(c.Args) == 0 {
		return nil, errors.New("no command")
	}
	sb.mu.Lock()
	select {
	case <-sb.dead:
		sb.mu.Unlock()
		return nil, sb.err
	default:
	}
	if sb.Stale() {
		sb.mu.Unlock()
		return nil, ErrStale
	}
	sb.nextID++
	p := &Process{sb: sb, id: sb.nextID, started: make(chan struct{}), exited: make(chan struct{})}
	sb.procs[p.id] = p
	sb.mu.Unlock()

	var send, local []*os.File
	pipe := func(w io.Writer) error {
		if w == nil {
			w = io.Discard
		}
		r, wf, err := os.Pipe()
		if err != nil {
			return err
		}
		send, local = append(send, wf), append(local, r)
		p.copies.Add(1)
		go func() {
			defer p.copies.Done()
			io.Copy(w, r)
			r.Close()
		}()
		return nil
	}
	streams := 2
	if c.Stdout == c.Stderr {
		streams = 1
	}
	err := pipe(c.Stdout)
	if err == nil && streams == 2 {
		err = pipe(c.Stderr)
	}
	if err == nil {
		err = sb.send(message{Op: "run", ID: p.id, Args: c.Args, Dir: c.Dir, Env: c.Env, Streams: streams, Extra: len(c.ExtraFiles)},
			append(slices.Clip(send), c.ExtraFiles...))
	}
	closeAll(send)
	if err != nil {
		closeAll(local)
		sb.mu.Lock()
		delete(sb.procs, p.id)
		sb.mu.Unlock()
		return nil, err
	}
	select {
	case <-p.started:
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
	if p.pid == 0 {
		p.copies.Wait()
		return nil, p.err
	}
	return p, nil
}

func (p *Process) event(m message) {
	switch m.Op {
	case "started":
		p.pid = m.Pid
		p.once.Do(func() { close(p.started) })
	case "failed":
		p.err = errors.New(m.Error)
		p.signal = m.Signal
		p.once.Do(func() { close(p.started) })
		select {
		case <-p.exited:
		default:
			close(p.exited)
		}
	case "exited":
		p.code, p.signal = m.Code, m.Signal
		p.once.Do(func() { close(p.started) })
		close(p.exited)
	}
}

// Pid is the command's process id as the sandbox sees it (its /proc).
func (p *Process) Pid() int { return p.pid }

// Kill ends the command and everything it started.
func (p *Process) Kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	return p.sb.send(message{Op: "kill", ID: p.id, Signal: int(syscall.SIGKILL)}, nil)
}

// Done is closed when the command has ended.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Wait waits for the command to end and its output to be read; it returns
// the exit code (128+n for signal n) and an error only when the sandbox
// could not run it or ended under it.
func (p *Process) Wait() (int, error) {
	<-p.exited
	p.copies.Wait()
	if p.err != nil {
		return -1, p.err
	}
	if p.signal != 0 {
		return 128 + p.signal, nil
	}
	return p.code, nil
}

// limitedWriter keeps the first n bytes.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(b))
		l.w.Write(b[:k])
		l.n -= k
	}
	return len(b), nil
}
