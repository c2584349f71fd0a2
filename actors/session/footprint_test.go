package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events/embedded"
)

// footprint is what the process holds at one moment.
type footprint struct {
	rssKiB, heapKiB   uint64
	anonKiB, fileKiB  uint64
	goKiB             uint64 // obtained by the Go runtime and not returned
	files, goroutines int
}

func (f footprint) String() string {
	return fmt.Sprintf("RSS %6.1f MiB (anon %6.1f, file %5.1f)  Go %6.1f MiB  heap %6.1f MiB  open files %5d  goroutines %5d",
		float64(f.rssKiB)/1024, float64(f.anonKiB)/1024, float64(f.fileKiB)/1024, float64(f.goKiB)/1024, float64(f.heapKiB)/1024, f.files, f.goroutines)
}

// measure collects garbage, returns freed memory to the system, and reads
// VmRSS (anonymous and file-backed: the store's memory-mapped database),
// what the Go runtime holds (the rest of the anonymous memory is the
// store's SQLite, allocated outside it), the Go heap in use, the open files (/proc/self/fd, sockets
// included) and the goroutines.
func measure(t testing.TB) footprint {
	t.Helper()
	debug.FreeOSMemory()
	var f footprint
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status here")
	}
	for _, l := range strings.Split(string(b), "\n") {
		for key, into := range map[string]*uint64{"VmRSS:": &f.rssKiB, "RssAnon:": &f.anonKiB, "RssFile:": &f.fileKiB} {
			if v, ok := strings.CutPrefix(l, key); ok {
				*into, _ = strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.heapKiB = ms.HeapInuse / 1024
	f.goKiB = (ms.Sys - ms.HeapReleased) / 1024
	es, _ := os.ReadDir("/proc/self/fd")
	f.files = len(es)
	f.goroutines = runtime.NumGoroutine()
	return f
}

// TestPassivationFootprint measures what a process running sessions holds
// before, while and after HERMES_FOOTPRINT_N sessions (each created and
// touched with one message, 16 at a time) go idle: with passivation
// (HERMES_FOOTPRINT_IDLE, default 5s) or without (HERMES_FOOTPRINT_IDLE=never:
// the figures stay at "touched"); HERMES_FOOTPRINT_HEAP names a file for a
// heap profile at the end. Run on demand, one N per process:
//
//	HERMES_FOOTPRINT_N=10000 go test -run TestPassivationFootprint -v -timeout 30m ./actors/session/
func TestPassivationFootprint(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HERMES_FOOTPRINT_N"))
	if n <= 0 {
		t.Skip("a measurement: set HERMES_FOOTPRINT_N to run it")
	}
	idle := 5 * time.Second
	if v := os.Getenv("HERMES_FOOTPRINT_IDLE"); v == "never" {
		idle = -1
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		idle = d
	}
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := llmtest.New()
	srv.NoRecord = true
	srv.SetRoute(func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "hello to you", Prompt: 20, Completion: 4}
	})
	defer srv.Close()
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	mgr := session.NewManager(sys, session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}), Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Cfg: agent.Config{Model: "m"}, MaxTurns: 5,
		Leases: session.NewFileLeases(filepath.Join(dir, "locks"), session.ThisProcess()), IdleAfter: idle})
	defer mgr.Shutdown()

	// One session first, so that pools and caches are warm.
	touch := func(id string) {
		ctx := context.Background()
		if err := session.Create(ctx, store, id, session.Start{Source: "api", Model: "m", System: "You are Hermes."}); err != nil {
			t.Error(err)
			return
		}
		if res := mgr.Run(ctx, id, "hello", nil); res.Err != nil {
			t.Error(res.Err)
		}
	}
	touch("warm")
	before := measure(t)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				touch(fmt.Sprintf("s%d", i))
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	active := mgr.Active()
	touched := measure(t)
	t.Logf("%d sessions, idle after %v; touched in %v (%.0f sessions/s)", n, idle, took.Round(time.Millisecond), float64(n)/took.Seconds())
	t.Logf("before:          %v", before)
	t.Logf("touched:         %v  (%d session actors)", touched, active)
	if idle < 0 {
		return
	}
	start = time.Now()
	for mgr.Active() > 0 {
		if time.Since(start) > idle+5*time.Minute {
			t.Fatalf("%d sessions still active", mgr.Active())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last actors' goroutines end
	after := measure(t)
	t.Logf("idle:            %v  (%d session actors)", after, mgr.Active())
	if p := os.Getenv("HERMES_FOOTPRINT_HEAP"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
	}
}
