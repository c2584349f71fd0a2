// Command hermes is the Hermes agent's command line: chat, inspect sessions
// and their events, and manage the read models built from them.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/protoreg"
)

func main() {
	protoreg.Restore()
	// HERMES_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (go tool pprof FILE): how the per-call costs toolbench reports are
	// taken apart.
	stop := func() {}
	if path := os.Getenv("HERMES_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			stop = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	err := runRoot()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hermes:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

func runRoot() error { return newRoot(app.New()).Execute() }

// first is the first of vs that is not empty.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
