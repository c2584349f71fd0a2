//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system calls, which a filter for x86-64
	// numbers would not see: they are refused whole.
	x32Bit = 0x40000000
	// seccompArch tells Probe the filter exists for this architecture.
	seccompArch = true
)

// denied are the system calls that fail with EPERM in a sandbox.
var denied = append(deniedCommon, unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB,
	unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE, unix.SYS_NFSSERVCTL, unix.SYS_SYSFS,
	unix.SYS__SYSCTL, unix.SYS_USTAT)

var modes = append(modeCommon, modeArg{unix.SYS_CHMOD, 1})
