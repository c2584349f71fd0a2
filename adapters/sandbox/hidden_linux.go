package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// appearWatch tells whether any of a sandbox's missing hidden paths (those
// that did not exist when it started, so nothing hides them) has appeared
// since. It watches, with inotify, the deepest existing ancestor directory
// of each missing path: the kernel queues an event before the mkdir, rename
// or open that made an entry there returns, so a check that finds the queue
// empty knows that nothing relevant appeared before it, at the cost of one
// ioctl (FIONREAD, TIOCINQ in x/sys) per check instead of an lstat per hidden path. Only when
// events are queued are the paths looked at again and the watches moved
// down to the ancestors that now exist.
//
// Where inotify is not available (no instance or watch left), it falls back
// to an lstat of every missing path per check, as exact and slower.
type appearWatch struct {
	mu      sync.Mutex
	fd      int // inotify instance; -1: lstat every path per check
	missing []string
	watched map[string]bool // directories with a watch
	stale   bool            // once true, for good
	buf     []byte
}

// watchMask: entries made in a watched directory (created, moved in,
// attributes changed on a symlink replaced…), and the directory itself
// going away or being moved (its ancestor must then be watched instead).
const watchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// newAppearWatch starts watching for the paths of hidden that are missing
// now to appear.
func newAppearWatch(hidden []string) *appearWatch {
	w := &appearWatch{fd: -1, watched: map[string]bool{}}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		w.fd = fd
	}
	// Watches first, then the look: whatever appears after the look is
	// queued as an event.
	w.missing = hidden
	if w.fd >= 0 && w.arm() != nil {
		w.closeFD()
	}
	var missing []string
	for _, h := range hidden {
		if _, err := os.Lstat(h); err != nil {
			missing = append(missing, h)
		}
	}
	w.missing = missing
	if len(missing) == 0 {
		w.closeFD()
	}
	return w
}

// arm puts a watch on the deepest existing ancestor of every missing path,
// repeating until a pass adds none (an ancestor made meanwhile is then
// watched too).
func (w *appearWatch) arm() error {
	for range 8 {
		added := false
		for _, p := range w.missing {
			dir := deepestDir(p)
			if dir == "" || w.watched[dir] {
				continue
			}
			if _, err := unix.InotifyAddWatch(w.fd, dir, watchMask); err != nil {
				if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT) {
					added = true // it changed under us: look again
					continue
				}
				return err
			}
			w.watched[dir] = true
			added = true
		}
		if !added {
			return nil
		}
	}
	return nil
}

// deepestDir is the deepest ancestor of p that exists ("" for none).
func deepestDir(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

func (w *appearWatch) closeFD() {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// Stale reports whether a missing hidden path exists now.
func (w *appearWatch) Stale() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale {
		return true
	}
	if len(w.missing) == 0 {
		return false
	}
	if w.fd >= 0 {
		n, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ) // FIONREAD: bytes queued
		if err == nil && n == 0 {
			return false // nothing happened where a missing path would appear
		}
		w.drain(n)
	}
	for _, h := range w.missing {
		if _, err := os.Lstat(h); err == nil {
			w.stale = true
			w.closeFD()
			return true
		}
	}
	if w.fd >= 0 {
		// Directories on the way may exist now: watch further down. A
		// path made while arming is caught by the next check's events or
		// by the look above on the next one.
		w.watched = map[string]bool{}
		if w.arm() != nil {
			w.closeFD()
		}
		for _, h := range w.missing {
			if _, err := os.Lstat(h); err == nil {
				w.stale = true
				w.closeFD()
				return true
			}
		}
	}
	return false
}

// drain reads the n queued bytes of events; what they say does not matter
// (any event makes Stale look at the paths again).
func (w *appearWatch) drain(n int) {
	if len(w.buf) < n {
		w.buf = make([]byte, max(n, 4096))
	}
	unix.Read(w.fd, w.buf[:max(n, 1)])
}

// Close releases the inotify instance.
func (w *appearWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFD()
}
