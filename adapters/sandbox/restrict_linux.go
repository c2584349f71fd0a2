package sandbox

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h): uid 0 gains no capabilities at exec,
// and nothing can turn that back on.
const (
	secNoRoot             = 1 << 0
	secNoRootLocked       = 1 << 1
	secNoSetuidFixup      = 1 << 2
	secNoSetuidFixupLock  = 1 << 3
	secKeepCapsLocked     = 1 << 5
	secNoCapAmbientRaise  = 1 << 6
	secNoCapAmbientLocked = 1 << 7
)

// restrictThread closes the calling thread for good: no_new_privs, no
// capability any program it starts could keep, Landlock's rules for the
// policy and the seccomp filter. It must run on a locked OS thread.
func restrictThread(p Policy) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if err := landlock(p); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := seccomp(p.Network != NetOn); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// dropCapabilities empties the bounding and ambient sets and locks the
// securebits that keep uid 0 from regaining capabilities at exec. The
// thread keeps CAP_SYS_ADMIN in its own namespace only to start each
// command in a pid namespace of its own; the command loses it at exec.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secNoRoot|secNoRootLocked|secNoSetuidFixup|secNoSetuidFixupLock|
		secKeepCapsLocked|secNoCapAmbientRaise|secNoCapAmbientLocked, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break
			}
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	keep := uint32(1 << unix.CAP_SYS_ADMIN)
	data[0].Effective, data[0].Permitted = keep, keep
	return unix.Capset(&hdr, &data[0])
}

// LandlockABI is the Landlock version this kernel offers (0: none).
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

const (
	llRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	// llFile are the rights a rule on a file (not a directory) may hold.
	llFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlock restricts the thread's file system access: everything
// readable and executable (the mounts have hidden what must not be), and
// writable only beneath the writable roots, /tmp, /dev/shm and the
// terminal devices. On ABI 6 and later the thread also cannot signal or
// reach abstract sockets of processes outside its domain.
func landlock(p Policy) error {
	abi := LandlockABI()
	if abi < 1 {
		return errors.New("this kernel has no Landlock")
	}
	handled := uint64(llRead | llWrite)
	extra := uint64(0)
	if abi >= 2 {
		extra |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		extra |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		extra |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	handled |= extra
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := uintptr(8)
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 24
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, access uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFile
		}
		access &= handled
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("rule for %s: %w", path, errno)
		}
		return nil
	}
	all := handled
	if err := add("/", llRead); err != nil {
		return err
	}
	for _, w := range append(p.Writable, "/tmp", "/dev/shm") {
		if err := add(w, all); err != nil {
			return err
		}
	}
	dev := uint64(llRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | extra)
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/random", "/dev/urandom"} {
		if err := add(d, dev); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict: %w", errno)
	}
	return nil
}

// seccomp installs the filter on the calling thread: the system calls
// that reach beyond the sandbox (ptrace and process memory of others,
// mounts, kernel modules and kexec, bpf, keyrings, new user namespaces,
// perf, userfaultfd, handles that bypass paths, terminal injection) fail
// with EPERM; clone3, whose flags a filter cannot read, fails with ENOSYS
// so that the C library falls back to clone; another architecture's
// system calls are killed.
func seccomp(noUnix bool) error {
	prog := filter(noUnix)
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); errno != 0 {
		return errno
	}
	return nil
}

const (
	bpfLdW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K

	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
}

// filter is the seccomp program. Offsets into struct seccomp_data: nr 0,
// arch 4, args[i] at 16+8i (the low 32 bits first, little endian). With
// noUnix (the network off or filtered) no Unix socket can be made either:
// a daemon's socket anywhere on the file system would be a way out that
// this kernel's Landlock cannot close (socketpair still works).
func filter(noUnix bool) []unix.SockFilter {
	f := []unix.SockFilter{
		stmt(bpfLdW, 4),
		jump(bpfJeq, auditArch, 1, 0),
		stmt(bpfRet, retKill),
		stmt(bpfLdW, 0),
	}
	if x32Bit != 0 {
		f = append(f, jump(bpfJge, x32Bit, 0, 1), stmt(bpfRet, retErrno|uint32(unix.EPERM)))
	}
	for _, nr := range denied {
		f = append(f, jump(bpfJeq, uint32(nr), 0, 1), stmt(bpfRet, retErrno|uint32(unix.EPERM)))
	}
	for _, m := range modes {
		f = append(f,
			jump(bpfJeq, uint32(m.nr), 0, 3),
			stmt(bpfLdW, 16+8*m.arg),
			jump(bpfJset, unix.S_ISUID|unix.S_ISGID, 0, 1),
			stmt(bpfRet, retErrno|uint32(unix.EPERM)),
			stmt(bpfLdW, 0))
	}
	if noUnix {
		f = append(f,
			jump(bpfJeq, uint32(unix.SYS_SOCKET), 0, 3),
			stmt(bpfLdW, 16),
			jump(bpfJeq, unix.AF_UNIX, 0, 1),
			stmt(bpfRet, retErrno|uint32(unix.EPERM)),
			stmt(bpfLdW, 0))
	}
	f = append(f,
		jump(bpfJeq, uint32(unix.SYS_CLONE3), 0, 1), stmt(bpfRet, retErrno|uint32(unix.ENOSYS)),
		// clone with CLONE_NEWUSER
		jump(bpfJeq, uint32(unix.SYS_CLONE), 0, 3),
		stmt(bpfLdW, 16),
		jump(bpfJset, unix.CLONE_NEWUSER, 0, 1),
		stmt(bpfRet, retErrno|uint32(unix.EPERM)),
		stmt(bpfLdW, 0),
		// ioctl TIOCSTI / TIOCLINUX
		jump(bpfJeq, uint32(unix.SYS_IOCTL), 0, 4),
		stmt(bpfLdW, 24),
		jump(bpfJeq, unix.TIOCSTI, 1, 0),
		jump(bpfJeq, unix.TIOCLINUX, 0, 1),
		stmt(bpfRet, retErrno|uint32(unix.EPERM)),
		stmt(bpfRet, retAllow),
	)
	return f
}
