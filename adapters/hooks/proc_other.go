//go:build !unix

package hooks

import (
	"os/exec"
	"time"
)

func ownGroup(cmd *exec.Cmd) { cmd.WaitDelay = time.Second }
