//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
)

// FileLeases are session leases held as flock(2) locks on files in one
// directory ($HERMES_HOME/locks), one file per session. The kernel drops
// a lock when its process ends however it ends (kill -9 included), so a
// dead owner never blocks a session and no heartbeat is needed between
// processes of one machine. The file holds the owner (host, pid, since)
// for the refusal's message; a file still naming an owner when its lock
// is free was left by a process that died holding it.
//
// flock only works among processes that see the same kernel (or an NFS
// server that emulates it); the distributed store needs a lease with an
// expiry instead (an etcd lease kept alive by the owner).
type FileLeases struct {
	dir  string
	self Owner
}

// NewFileLeases keeps leases in dir, naming self as their owner.
func NewFileLeases(dir string, self Owner) *FileLeases {
	return &FileLeases{dir: dir, self: self}
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$`)

// fileOf is the lock file of a session: its id when that is a safe file
// name, else a hash of it.
func (f *FileLeases) fileOf(session string) string {
	name := session
	if !plainName.MatchString(name) {
		sum := sha256.Sum256([]byte(session))
		name = hex.EncodeToString(sum[:16])
	}
	return filepath.Join(f.dir, "session-"+name+".lock")
}

// Lease implements Leaser.
func (f *FileLeases) Lease(session string) (Lease, error) {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease session %s: %w", session, err)
	}
	path := f.fileOf(session)
	for {
		file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lease session %s: %w", session, err)
		}
		if err := flock(file, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			owner, _ := readOwner(file)
			file.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &InUseError{Session: session, Owner: owner}
			}
			return nil, fmt.Errorf("lease session %s: lock %s: %w", session, path, err)
		}
		// A releasing owner removes the file while it holds the lock: the
		// lock just taken may be on a file no longer at path.
		if !samePath(file, path) {
			file.Close()
			continue
		}
		l := &fileLease{path: path, file: file}
		if prev, err := readOwner(file); err == nil && prev.PID != 0 {
			l.prev = &prev
		}
		b, _ := json.Marshal(f.self)
		if _, err := file.WriteAt(append(b, '\n'), 0); err != nil {
			l.Release()
			return nil, fmt.Errorf("lease session %s: %w", session, err)
		}
		file.Truncate(int64(len(b) + 1))
		return l, nil
	}
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

func readOwner(f *os.File) (Owner, error) {
	var o Owner
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || len(b) == 0 {
		return o, errors.New("no owner")
	}
	err = json.Unmarshal(b, &o)
	return o, err
}

type fileLease struct {
	path string
	file *os.File
	prev *Owner
}

func (l *fileLease) Previous() *Owner { return l.prev }

// Release removes the file before unlocking it: a process that opened it
// meanwhile finds, once it has the lock, that it is no longer at path, and
// starts over with a new one.
func (l *fileLease) Release() error {
	rerr := os.Remove(l.path)
	flock(l.file, syscall.LOCK_UN)
	cerr := l.file.Close()
	return errors.Join(rerr, cerr)
}
