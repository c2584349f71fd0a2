//go:build !unix

package hooks

import (
	"os"
	"os/exec"
	"time"
)

func ownGroup(cmd *exec.Cmd) { cmd.WaitDelay = time.Second }

// lockFile is a no-op where there is no flock: one process at a time.
func lockFile(*os.File) error { return nil }
