package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Report is what this kernel lets the sandbox enforce.
type Report struct {
	// Landlock is the Landlock ABI version (0: none).
	Landlock int
	// UserNS tells whether this process may make user namespaces;
	// UserNSWhy says why not.
	UserNS    bool
	UserNSWhy string
	// Seccomp tells whether seccomp filters are available for this
	// architecture.
	Seccomp bool
	// Cgroup names the cgroup ceilings this process can set ("": only
	// rlimits bound processes and memory).
	Cgroup string
}

// Probe reads what this kernel offers, without starting anything.
func Probe() Report {
	r := Report{Landlock: LandlockABI(), UserNS: true}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		r.UserNS, r.UserNSWhy = false, "user.max_user_namespaces is 0"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" && os.Getuid() != 0 {
		r.UserNS, r.UserNSWhy = false, "kernel.unprivileged_userns_clone is 0"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" && os.Getuid() != 0 {
		r.UserNS, r.UserNSWhy = false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err == nil && v >= 0 {
		r.Seccomp = seccompArch
	}
	r.Cgroup = cgroupKind()
	return r
}

// Enforced tells whether the sandbox can run here.
func (r Report) Enforced() bool { return r.Landlock >= 1 && r.UserNS && r.Seccomp }

// Refusal is the error a terminal gives where the sandbox cannot run.
func (r Report) Refusal() error {
	var why []string
	if r.Landlock < 1 {
		why = append(why, "the kernel has no Landlock (Linux 5.13 or later with lsm=landlock)")
	}
	if !r.UserNS {
		why = append(why, "user namespaces are not available: "+r.UserNSWhy)
	}
	if !r.Seccomp {
		why = append(why, "seccomp filters are not available for this architecture")
	}
	return fmt.Errorf("%w: %s. Use terminal.backend: docker or ssh, or set sandbox.mode: full-access in config.yaml (commands then run unconfined)",
		ErrUnsupported, strings.Join(why, "; "))
}

// ErrUnsupported is returned where the kernel cannot enforce a sandbox.
var ErrUnsupported = errors.New("the sandbox cannot run on this machine")

// Lines describe the report for hermes doctor.
func (r Report) Lines() []string {
	out := []string{}
	if r.Landlock > 0 {
		out = append(out, fmt.Sprintf("Landlock ABI %d: file system rules%s", r.Landlock, map[bool]string{true: ", signal and abstract-socket scoping", false: ""}[r.Landlock >= 6]))
	} else {
		out = append(out, "Landlock: not available")
	}
	if r.UserNS {
		out = append(out, "user, mount, pid, ipc and network namespaces: available")
	} else {
		out = append(out, "namespaces: not available ("+r.UserNSWhy+")")
	}
	out = append(out, map[bool]string{true: "seccomp filter: available", false: "seccomp filter: not available"}[r.Seccomp])
	if r.Cgroup != "" {
		out = append(out, "process and memory ceilings: "+r.Cgroup)
	} else if os.Getuid() == 0 {
		out = append(out, "process and memory ceilings: rlimits only, and RLIMIT_NPROC does not bind root: a fork bomb is not bounded")
	} else {
		out = append(out, "process and memory ceilings: rlimits only (RLIMIT_NPROC, RLIMIT_DATA per process)")
	}
	return out
}
