package terminal

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// A warm shell takes the fork and exec of a command's shell off the path
// of the tool call. When a command of a session ends, the session's
// sandbox starts the shell of its next command right away, while the
// model is asked what to do next (started beside the command instead, it
// competed with it and made calls slower); the shell waits, running
// nothing, until it is handed a command on its descriptor 3. The next
// command, once approved and recorded, is written there and runs at once.
//
// Nothing runs before the hand-over: the shell only reads, and if Hermes
// goes away (or drops the shell) the read ends without the command's
// terminating NUL and the shell exits 125 having run nothing. A warm
// shell is the same shell, in the same sandbox (same policy, a pid
// namespace of its own as every command has), with the same working
// directory and environment as a cold start would give the command; when
// any of those changed since, it is dropped and the command starts cold.
// What the command sees differs from `bash -c COMMAND` only in that it
// runs under eval: $0, the arguments, the variables and the open
// descriptors are the same.
//
// The command arrives on a socket, not a pipe. Another command of the
// session (a background job) sees the waiting shell in /proc, and could
// open a pipe's end there and write a command of its own ahead of the
// approved one; a socket cannot be opened through /proc, and taking a
// descriptor from another process (pidfd_getfd, ptrace) is refused by the
// sandbox's seccomp filter (TestWarmShellTakesNoCommandFromAnother).

// warmScript is the waiting shell's script: read the command up to its
// NUL (a read fails without one), close the socket it came on, and run
// it, the variable it was read into unset first.
const warmScript = `IFS= read -r -d '' h <&3 || exit 125
exec 3<&-
eval "unset h
$h"`

// handed is what a warm shell is handed for command.
func handed(command string) []byte { return append([]byte(command), 0) }

// maxWarmCommand bounds the commands handed to a warm shell. bash reads
// from a socket a byte a system call (it must not read past the NUL), a
// few hundred nanoseconds a byte here: a longer command starts cold,
// where its exec costs less than reading it would.
const maxWarmCommand = 2 << 10

type warmShell struct {
	sb  *sandbox.Sandbox
	p   *sandbox.Process
	cmd *os.File // Hermes' end of the socket that is the shell's descriptor 3
	out *handOff
	dir string
	env []string
}

// warmable reports whether command can be handed to a warm shell of
// shell: bash reads it (read -d is not POSIX), it is short (see
// maxWarmCommand), and it has no NUL, which a cold start refuses and a
// warm shell would take for the command's end.
func warmable(shell, command string) bool {
	return filepath.Base(shell) == "bash" && len(command) <= maxWarmCommand && !strings.ContainsRune(command, 0)
}

// startWarm starts a waiting shell in sb.
func startWarm(sb *sandbox.Sandbox, shell, dir string, env []string) (*warmShell, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	r, w := os.NewFile(uintptr(fds[0]), "warm-shell"), os.NewFile(uintptr(fds[1]), "warm-shell-hermes")
	out := &handOff{}
	p, err := sb.Start(context.Background(), sandbox.Cmd{Args: []string{shell, "-c", warmScript, shell}, Dir: dir, Env: env,
		Stdout: out, Stderr: out, ExtraFiles: []*os.File{r}})
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &warmShell{sb: sb, p: p, cmd: w, out: out, dir: dir, env: env}, nil
}

// run hands command to the shell, its output to out.
func (w *warmShell) run(command string, out io.Writer) (*sandbox.Process, error) {
	w.out.set(out)
	_, err := w.cmd.Write(handed(command))
	if cerr := w.cmd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.p.Kill()
		return nil, err
	}
	return w.p, nil
}

// drop ends the shell without a command.
func (w *warmShell) drop() {
	w.cmd.Close()
	w.p.Kill()
}

func (w *warmShell) exited() bool {
	select {
	case <-w.p.Done():
		return true
	default:
		return false
	}
}

// handOff is a warm shell's output: kept (up to 64 KiB) until the shell
// is handed its command, then passed to that command's writer.
type handOff struct {
	mu    sync.Mutex
	w     io.Writer
	early []byte
}

func (h *handOff) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		if len(h.early) < 64<<10 {
			h.early = append(h.early, b[:min(len(b), 64<<10-len(h.early))]...)
		}
		return len(b), nil
	}
	return h.w.Write(b)
}

func (h *handOff) set(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.early) > 0 {
		w.Write(h.early)
		h.early = nil
	}
	h.w = w
}

// takeWarm returns the session's warm shell if it was started in sb, in
// dir, with env, and still waits; any other is dropped. One still being
// started is waited for, as long as ctx lasts.
func (s *sessionSandbox) takeWarm(ctx context.Context, sb *sandbox.Sandbox, dir string, env []string) *warmShell {
	s.mu.Lock()
	if s.warming != nil {
		// One is being started: it will be ready sooner than a command
		// started now.
		ready := s.warming
		s.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
		s.mu.Lock()
	}
	w := s.warm
	s.warm = nil
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	if w.sb == sb && w.dir == dir && slices.Equal(w.env, env) && !w.exited() {
		return w
	}
	w.drop()
	return nil
}

// prepare starts the warm shell of the session's next command in sb,
// unless one waits or is being started, or sb is no longer the session's.
func (s *sessionSandbox) prepare(sb *sandbox.Sandbox, shell, dir string, env []string) {
	s.mu.Lock()
	if s.sb != sb || s.warm != nil || s.warming != nil {
		s.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	s.warming = ready
	s.mu.Unlock()
	w, err := startWarm(sb, shell, dir, env)
	s.mu.Lock()
	s.warming = nil
	close(ready)
	if err != nil {
		s.mu.Unlock()
		if !errors.Is(err, sandbox.ErrStale) && sb.Alive() {
			s.owner.Log.Debug().Err(err).Msg("sandbox: start the next command's shell ahead")
		}
		return
	}
	if s.sb != sb || s.warm != nil {
		s.mu.Unlock()
		w.drop()
		return
	}
	s.warm = w
	s.warmStarts++
	s.mu.Unlock()
	// Unused for a while (the turn ended; the model answered in words),
	// it goes: a gateway keeps no idle shell per session between turns.
	idle := s.owner.WarmIdle
	if idle <= 0 {
		idle = defaultWarmIdle
	}
	time.AfterFunc(idle, func() {
		s.mu.Lock()
		mine := s.warm == w
		if mine {
			s.warm = nil
		}
		s.mu.Unlock()
		if mine {
			w.drop()
		}
	})
}

// defaultWarmIdle is how long a warm shell waits for its command.
const defaultWarmIdle = 30 * time.Second
