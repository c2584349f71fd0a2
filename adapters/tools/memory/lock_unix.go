//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package memory

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes the exclusive flock(2) lock of d's file: MEMORY.md.lock
// beside MEMORY.md, the lock the Python agent's memory tool takes, so the
// two programs never write the file at once.
func lockFile(d disk) (unlock func(), err error) {
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(d.path()+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
