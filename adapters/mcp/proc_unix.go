//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
	"time"
)

// ownGroup starts a stdio server in its own process group: Ctrl-C in the
// terminal stops Hermes' turn, not its MCP servers, and the servers'
// own children (npx starts node) can be ended with them.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
}

// killGroup ends whatever is left of a server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
