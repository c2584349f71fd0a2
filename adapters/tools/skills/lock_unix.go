//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package skills

import (
	"errors"
	"os"
	"syscall"
)

// lockPath takes the exclusive flock(2) lock of the file p (made if
// missing): held by one open file at a time, across processes and within
// one.
func lockPath(p string) (unlock func(), err error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
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
