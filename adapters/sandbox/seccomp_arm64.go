//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch   = unix.AUDIT_ARCH_AARCH64
	x32Bit      = 0
	seccompArch = true
)

var denied = deniedCommon

var modes = modeCommon
