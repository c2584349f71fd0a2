//go:build linux && !amd64 && !arm64

package sandbox

const (
	auditArch   = 0
	x32Bit      = 0
	seccompArch = false
)

var denied []uintptr

var modes []modeArg
