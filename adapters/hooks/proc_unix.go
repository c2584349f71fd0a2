//go:build unix

package hooks

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup runs a hook in its own process group, so that a timeout ends
// the children it started too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
}

// lockFile takes an exclusive lock on f, released when f is closed.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
