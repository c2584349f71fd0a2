package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// errMoved is returned when a path that resolve checked changed into a
// symbolic link before the tool used it: a process racing the tool (a
// background command swapping a directory for a link to Hermes' home)
// cannot redirect a read or a write.
var errMoved = errors.New("the path changed while the tool used it (a symbolic link appeared): not followed")

// openDir opens the directory dir, a real path (no symbolic links in it
// when resolve checked it), one component at a time without following a
// link; with create it makes missing components.
func openDir(dir string, create bool) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(filepath.Clean(dir), "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("mkdir %s: %w", c, err)
			}
			next, err = unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		unix.Close(fd)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("%s: %w", dir, errMoved)
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		fd = next
	}
	return fd, nil
}

// openReal opens the real path p for reading without following a
// symbolic link anywhere in it; anything but a regular file (a FIFO
// that would block for ever, a device) is refused before it is read.
func openReal(p string) (*os.File, error) {
	dir, err := openDir(filepath.Dir(p), false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, filepath.Base(p), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s: %w", p, errMoved)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		unix.Close(fd)
		return nil, &os.PathError{Op: "read", Path: p, Err: unix.EISDIR}
	default:
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file (a FIFO, socket or device): not read", p)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// writeAtomic writes through a temporary file and a rename, so a crash
// leaves either the old or the new file, never half of one; both happen
// in the directory as resolve saw it, never through a symbolic link.
func writeAtomic(p string, data []byte) error {
	dir, err := openDir(filepath.Dir(p), true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	base := filepath.Base(p)
	mode := uint32(0o644)
	var st unix.Stat_t
	if unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		mode = st.Mode & 0o777
	}
	b := make([]byte, 6)
	rand.Read(b)
	tmp := ".hermes-write-" + hex.EncodeToString(b)
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(filepath.Dir(p), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = unix.Fchmod(fd, mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, base)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	return nil
}
