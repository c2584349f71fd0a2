//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package skillhub

import (
	"errors"
	"os"
	"syscall"
)

// lockPath takes the exclusive flock(2) lock of the file p (made if
// missing), so two processes do not fetch into one cache at once.
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
