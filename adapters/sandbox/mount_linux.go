package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// buildMounts shapes the sandbox's view of the file system, inside its
// own mount namespace: a minimal /dev, the private /tmp, the home's top
// level and start-up files read-only, the hidden paths empty wherever they
// are mounted, and a /proc that shows only the sandbox's processes.
// Landlock (restrictThread) then decides what may be written.
func buildMounts(p Policy) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	hidden := withAliases(p.Hidden)
	// Places that a covering mount must carry over: the workspace and
	// what configuration exposed again.
	keep := append(slices.Clone(p.Writable), p.Visible...)
	// The resolver's configuration may live in /run, which is hidden.
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && r != "/etc/resolv.conf" {
		keep = append(keep, filepath.Dir(r))
	}
	if err := devices(); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	if err := cover("/tmp", keep, false, func() error {
		return unix.Mount(p.Tmp, "/tmp", "", unix.MS_BIND|unix.MS_REC, "")
	}); err != nil {
		return fmt.Errorf("private /tmp: %w", err)
	}
	// Each writable root becomes a mount of its own: it stays writable
	// when the rest is made read-only below, and cannot be renamed away.
	for _, w := range p.Writable {
		if st, err := os.Stat(w); err == nil && st.IsDir() {
			if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("writable root %s: %w", w, err)
			}
		}
	}
	inWritable := func(x string) (string, bool) {
		for _, w := range p.Writable {
			if within(x, w) {
				return w, true
			}
		}
		return "", false
	}
	if p.Home != "" {
		if _, ok := inWritable(p.Home); ok {
			if err := narrowHome(p.Home); err != nil {
				return fmt.Errorf("home %s: %w", p.Home, err)
			}
		}
	}
	protected := slices.Clone(p.Protected)
	for _, w := range p.Writable {
		// A repository's metadata runs code later (hooks, config,
		// commondir), outside the sandbox: read-only unless configured
		// writable itself.
		if git := filepath.Join(w, ".git"); !slices.Contains(p.Writable, git) {
			protected = append(protected, git)
		}
		protected = append(protected, filepath.Join(w, ".hermes"))
	}
	for _, x := range protected {
		w, ok := inWritable(x)
		if !ok || x == w {
			continue // Landlock and the read-only mounts keep it read-only already
		}
		if _, err := os.Lstat(x); err != nil {
			continue
		}
		if err := pin(x, w); err != nil {
			return fmt.Errorf("protect %s: %w", x, err)
		}
		if err := readOnlyBind(x); err != nil {
			return fmt.Errorf("protect %s: %w", x, err)
		}
	}
	for _, h := range hidden {
		if w, ok := inWritable(h); ok && h != w {
			if _, err := os.Lstat(h); err == nil {
				if err := pin(h, w); err != nil {
					return fmt.Errorf("hide %s: %w", h, err)
				}
			}
		}
		if err := hide(h, keep); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := readOnlyRest(p.Writable); err != nil {
		return err
	}
	return unix.Chdir("/")
}

// pin makes every directory between x and the writable root w a mount
// point of its own, so that none of them can be renamed: a protected or
// hidden place cannot be moved from under its mount.
func pin(x, w string) error {
	var dirs []string
	for d := filepath.Dir(x); d != w && within(d, w); d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Mount(dirs[i], dirs[i], "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyRest makes every mount outside the writable roots, the private
// /tmp, /dev/shm, /dev/pts and /proc read-only: Landlock (before ABI 8)
// does not cover changing a file's mode, times or extended attributes,
// and the sandbox's user owns most of the system where Hermes runs as
// root.
func readOnlyRest(writable []string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	keep := append([]string{"/tmp", "/dev/shm", "/dev/pts", "/proc"}, writable...)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 {
			continue
		}
		m := unescape(fs[4])
		if seen[m] || slices.ContainsFunc(keep, func(k string) bool { return within(m, k) }) {
			continue
		}
		seen[m] = true
		if strings.Contains(","+fs[5]+",", ",ro,") {
			continue
		}
		if err := unix.Mount("", m, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(m), ""); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) {
				continue // shadowed or unreachable
			}
			return fmt.Errorf("make %s read-only: %w", m, err)
		}
	}
	return nil
}

// cover mounts something over target with mount, carrying over the
// places of keep beneath it (bound back from descriptors opened before).
// With ro the covering mount is read-only once they are in place.
func cover(target string, keep []string, ro bool, mount func() error) error {
	type held struct {
		path string
		fd   int
		dir  bool
	}
	var hs []held
	for _, k := range keep {
		if k == target || !within(k, target) {
			continue
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		hs = append(hs, held{k, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	defer func() {
		for _, h := range hs {
			unix.Close(h.fd)
		}
	}()
	if err := mount(); err != nil {
		return err
	}
	for _, h := range hs {
		if h.dir {
			if err := os.MkdirAll(h.path, 0o755); err != nil {
				return err
			}
		} else {
			os.MkdirAll(filepath.Dir(h.path), 0o755)
			f, err := os.OpenFile(h.path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", h.fd), h.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("carry %s over: %w", h.path, err)
		}
	}
	if ro {
		return unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "size=16k,mode=0555")
	}
	return nil
}

// hide makes h empty: an empty read-only directory over a directory, the
// null device over anything else.
func hide(h string, keep []string) error {
	st, err := os.Lstat(h)
	if err != nil || st.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	if !st.IsDir() {
		return unix.Mount("/dev/null", h, "", unix.MS_BIND, "")
	}
	return cover(h, keep, true, func() error {
		return unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=16k,mode=0755")
	})
}

// readOnlyBind makes x read-only where it is.
func readOnlyBind(x string) error {
	if err := unix.Mount(x, x, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", x, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(x), "")
}

// lockedFlags are the flags of the mount holding x that a remount in a
// user namespace must keep.
func lockedFlags(x string) uintptr {
	var s unix.Statfs_t
	if unix.Statfs(x, &s) != nil {
		return 0
	}
	var f uintptr
	for st, ms := range map[int64]uintptr{unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
		0x2000: unix.MS_NOSYMFOLLOW} {
		if s.Flags&st != 0 {
			f |= ms
		}
	}
	return f
}

// narrowHome leaves writable only the home's existing entries whose names
// do not start with a dot: its top level (new dot files included) and its
// dot entries become read-only.
func narrowHome(home string) error {
	entries, err := os.ReadDir(home)
	if err != nil {
		return err
	}
	for _, e := range entries {
		// bin is on PATH in many profiles: a program planted there runs
		// later in the person's own shell.
		if strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		x := filepath.Join(home, e.Name())
		if err := unix.Mount(x, x, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
	}
	return readOnlyBind(home)
}

// devices mounts a minimal /dev: the harmless character devices, a
// private pseudo-terminal instance and shared memory; no disks.
func devices() error {
	names := []string{"null", "zero", "full", "random", "urandom", "tty"}
	fds := map[string]int{}
	for _, n := range names {
		fd, err := unix.Open("/dev/"+n, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			fds[n] = fd
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return err
	}
	for _, n := range names {
		fd, ok := fds[n]
		if !ok {
			continue
		}
		f, err := os.OpenFile("/dev/"+n, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), "/dev/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=256m,mode=1777"); err != nil {
		return err
	}
	for link, to := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(to, "/dev/"+link); err != nil {
			return err
		}
	}
	return nil
}

// withAliases adds, for each hidden path, the other places the same
// directory is mounted (a bind mount of /home elsewhere shows the same
// files under another name).
func withAliases(hidden []string) []string {
	type mnt struct {
		dev, root, point string
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return hidden
	}
	defer f.Close()
	var ms []mnt
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) < 5 {
			continue
		}
		ms = append(ms, mnt{fs[2], unescape(fs[3]), unescape(fs[4])})
	}
	out := slices.Clone(hidden)
	for _, h := range hidden {
		var st unix.Stat_t
		if unix.Stat(h, &st) != nil {
			continue
		}
		dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
		// The mount that holds h: the longest mount point above it on
		// the same device.
		var holder *mnt
		for i := range ms {
			m := &ms[i]
			if m.dev == dev && within(h, m.point) && (holder == nil || len(m.point) > len(holder.point)) {
				holder = m
			}
		}
		if holder == nil {
			continue
		}
		rel := filepath.Join(holder.root, strings.TrimPrefix(h, holder.point))
		for _, m := range ms {
			if m.dev != dev || m.point == holder.point {
				continue
			}
			var alias string
			switch {
			case within(rel, m.root):
				// A mount of a directory above it shows it beneath.
				alias = filepath.Join(m.point, strings.TrimPrefix(rel, m.root))
			case within(m.root, rel):
				// A mount of something inside it shows a part of it.
				alias = m.point
			default:
				continue
			}
			if !slices.Contains(out, alias) {
				out = append(out, alias)
			}
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
