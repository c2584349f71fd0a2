// Command hermes is the Hermes agent's command line: chat, inspect sessions
// and their events, and manage the read models built from them.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/protoreg"
)

func main() {
	protoreg.Restore()
	// HERMES_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (go tool pprof FILE): how the per-call costs toolbench reports are
	// taken apart. A %p in FILE is the process id (one profile per run,
	// to merge), and HERMES_CPUPROFILE_HZ samples more often than 100 Hz.
	stop := func() {}
	if path := os.Getenv("HERMES_CPUPROFILE"); path != "" {
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		if hz, _ := strconv.Atoi(os.Getenv("HERMES_CPUPROFILE_HZ")); hz > 0 {
			runtime.SetCPUProfileRate(hz) // StartCPUProfile then warns that it cannot set its own
		}
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			stop = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	// HERMES_TRACE=FILE writes an execution trace of the whole command
	// (go tool trace FILE; -pprof=sched shows where goroutines waited to
	// run): how the hand-offs of a tool call are counted. %p as above.
	if path := os.Getenv("HERMES_TRACE"); path != "" {
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		if f, err := os.Create(path); err == nil && trace.Start(f) == nil {
			prev := stop
			stop = func() { trace.Stop(); f.Close(); prev() }
		}
	}
	err := runRoot()
	stop()
	// HERMES_HEAPPROFILE=FILE writes the live heap at exit (go tool pprof
	// FILE): what a long-running gateway holds after a soak.
	if path := os.Getenv("HERMES_HEAPPROFILE"); path != "" {
		if f, ferr := os.Create(path); ferr == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
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
