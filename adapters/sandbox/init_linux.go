package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init is this program re-executed by Start with initEnv set; it
// never returns to the program's own main. Doing this in init (not in an
// explicit call from main) makes every binary that links the package —
// hermes and the test binaries of the packages that start sandboxes — a
// valid init without each remembering to call it.
func init() {
	if os.Getenv(initEnv) != "1" {
		return
	}
	os.Exit(runInit())
}

// proxyPort is where NetAllow's forwarder listens inside the sandbox.
const proxyPort = 3128

type initState struct {
	// ctl is the control socket's descriptor, blocking: the spawner
	// thread reads it (see spawner), any goroutine writes a datagram
	// under wmu.
	ctl    int
	wmu    sync.Mutex
	policy Policy
	mu     sync.Mutex
	pids   map[int]int // request id → pid
	devnul *os.File
	// gone is closed when the control socket closed (Hermes is gone).
	gone chan struct{}
}

func runInit() int {
	// Threads first, while the task ceiling is far: the init shares its
	// cgroup's pids.max with its commands, and a Go runtime that needs a
	// new OS thread while a fork bomb holds every task dies. Idle threads
	// made now are reused instead of made then.
	prewarmThreads(initThreads)
	// Descriptors Hermes inherited without close-on-exec must not reach
	// a command (an open file of the hidden home, a pipe); and the init's
	// working directory (perhaps inside the hidden home) is not theirs.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	unix.Chdir("/")
	// The control socket stays blocking and out of the runtime's poller:
	// its one reader is the spawner's thread, which sleeps in recvmsg
	// until Hermes writes, and wakes straight into the fork.
	if err := unix.SetNonblock(3, false); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox init: control socket:", err)
		return 1
	}
	st := &initState{ctl: 3, pids: map[int]int{}, gone: make(chan struct{})}
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*16))
	n, _, err := st.recv(buf, oob)
	if err != nil {
		return 1
	}
	var first message
	if err := json.Unmarshal(buf[:n], &first); err != nil || first.Policy == nil {
		st.send(message{Op: "error", Error: "sandbox init: no policy"}, nil)
		return 1
	}
	st.policy = *first.Policy
	if err := st.setup(); err != nil {
		st.send(message{Op: "error", Error: "sandbox: " + err.Error()}, nil)
		return 1
	}
	st.send(message{Op: "ready"}, nil)
	// Hermes gone: ending the init ends every process of the sandbox.
	<-st.gone
	return 0
}

// recv reads one datagram of the control socket, blocking; n == 0 with a
// nil error is the socket's end.
func (st *initState) recv(buf, oob []byte) (n, oobn int, err error) {
	for {
		n, oobn, _, _, err = unix.Recvmsg(st.ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			return n, oobn, err
		}
	}
}

// serve reads and handles the control socket's requests until it closes;
// it runs on the spawner's thread (see spawner).
func (st *initState) serve() {
	defer close(st.gone)
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*16))
	for {
		n, oobn, err := st.recv(buf, oob)
		if err != nil || n == 0 {
			return
		}
		files := receivedFiles(oob[:oobn])
		var m message
		if json.Unmarshal(buf[:n], &m) != nil {
			closeAll(files)
			continue
		}
		switch m.Op {
		case "run":
			st.run(m, files)
		case "kill":
			st.mu.Lock()
			pid := st.pids[m.ID]
			st.mu.Unlock()
			if pid > 0 {
				unix.Kill(pid, syscall.Signal(m.Signal))
			}
			closeAll(files)
		default:
			closeAll(files)
		}
	}
}

func (st *initState) send(m message, files []*os.File) {
	b, _ := json.Marshal(m)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	st.wmu.Lock()
	for unix.Sendmsg(st.ctl, b, oob, nil, 0) == unix.EINTR {
	}
	st.wmu.Unlock()
}

// setup builds the sandbox's file system and network, then starts the
// thread that restricts itself and starts every command.
func (st *initState) setup() error {
	p := st.policy
	var err error
	if st.devnul, err = os.Open("/dev/null"); err != nil {
		return err
	}
	if err := setLimits(p.Limits); err != nil {
		return err
	}
	if err := buildMounts(p); err != nil {
		return err
	}
	if p.Network != NetOn {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up loopback: %w", err)
		}
	}
	if p.Network == NetAllow {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", proxyPort))
		if err != nil {
			return fmt.Errorf("proxy forwarder: %w", err)
		}
		go st.forward(ln)
	}
	ready := make(chan error)
	go st.spawner(ready)
	return <-ready
}

// forward hands every connection made to the proxy port inside the
// sandbox to Hermes, which decides where it may go.
func (st *initState) forward(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			continue
		}
		st.send(message{Op: "conn"}, []*os.File{f})
		f.Close()
	}
}

// spawner runs on one OS thread for good: it drops that thread's
// capabilities, sets no_new_privs and enters Landlock and seccomp, so
// every process it forks starts inside them (they are per thread and
// inherited). The same thread reads the control socket (serve): a request
// to run wakes it directly, with no hand-off from a reading goroutine to
// it. The init's other threads wait for commands' ends and serve the
// proxy forwarder.
func (st *initState) spawner(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread is the wall's door
	if err := restrictThread(st.policy); err != nil {
		ready <- err
		return
	}
	ready <- nil
	st.serve()
}

func (st *initState) run(m message, files []*os.File) {
	defer closeAll(files)
	fail := func(err error) {
		st.send(message{Op: "failed", ID: m.ID, Error: err.Error()}, nil)
	}
	if len(files) != m.Streams+m.Extra || m.Streams < 1 || m.Streams > 2 || len(m.Args) == 0 {
		fail(errors.New("bad run request"))
		return
	}
	env := m.Env
	if st.policy.Network == NetAllow {
		proxy := fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
		env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			switch strings.ToUpper(k) {
			case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
				return true
			}
			return false
		})
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
			env = append(env, k+"="+proxy)
		}
		env = append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	}
	path, err := lookPath(m.Args[0], env, m.Dir)
	if err != nil {
		fail(err)
		return
	}
	stderr := files[0]
	if m.Streams == 2 {
		stderr = files[1]
	}
	cmd := &exec.Cmd{Path: path, Args: m.Args, Env: env, Dir: m.Dir, Stdin: st.devnul, Stdout: files[0], Stderr: stderr,
		ExtraFiles:  files[m.Streams:],
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID, Setsid: true}}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Op == "chdir" {
			err = fmt.Errorf("working directory %s does not exist in the sandbox (a hidden or missing path)", m.Dir)
		}
		fail(err)
		return
	}
	pid := cmd.Process.Pid
	st.mu.Lock()
	st.pids[m.ID] = pid
	st.mu.Unlock()
	st.send(message{Op: "started", ID: m.ID, Pid: pid}, nil)
	go func() {
		cmd.Wait()
		st.mu.Lock()
		delete(st.pids, m.ID)
		st.mu.Unlock()
		out := message{Op: "exited", ID: m.ID}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.Signal = int(ws.Signal())
		} else {
			out.Code = cmd.ProcessState.ExitCode()
		}
		st.send(out, nil)
	}()
}

// lookPath finds a program the way a shell would, with the command's own
// PATH.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			return filepath.Join(dir, name), nil
		}
		return name, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		f := filepath.Join(d, name)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in the sandbox's PATH", name)
}

// setLimits sets the rlimits every command inherits. RLIMIT_NPROC counts
// per user namespace and does not bind the root user: the cgroup is the
// real ceiling where one could be made.
func setLimits(l Limits) error {
	l = l.withDefaults()
	set := func(res int, v uint64) {
		var cur unix.Rlimit
		if unix.Getrlimit(res, &cur) == nil && cur.Max < v {
			v = cur.Max
		}
		unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
	}
	set(unix.RLIMIT_CORE, 0)
	set(unix.RLIMIT_NPROC, uint64(l.Procs))
	set(unix.RLIMIT_DATA, uint64(l.Memory))
	return nil
}

func (l Limits) withDefaults() Limits {
	if l.Procs <= 0 {
		l.Procs = 1024
	}
	if l.Memory <= 0 {
		l.Memory = 8 << 30
		if total := physicalMemory(); total > 0 && total/2 < l.Memory {
			l.Memory = total / 2
		}
	}
	return l
}

func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// initThreads is how many OS threads the init makes before it starts: more
// than it ever has blocked at once (the control socket, a pid wait per
// running command, the proxy), so the runtime need not make one later.
const initThreads = 8

// prewarmThreads makes the runtime hold n OS threads: n goroutines each
// locked to a thread of its own at the same time, then let go (an unlocked
// thread goes back to the runtime's idle pool, not away).
func prewarmThreads(n int) {
	var ready sync.WaitGroup
	release := make(chan struct{})
	done := make(chan struct{}, n)
	for range n {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			<-release
			runtime.UnlockOSThread()
			done <- struct{}{}
		}()
	}
	ready.Wait()
	close(release)
	for range n {
		<-done
	}
}
