//go:build !unix

package mcp

import (
	"os/exec"
	"time"
)

func ownGroup(cmd *exec.Cmd) { cmd.WaitDelay = time.Second }

func killGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
