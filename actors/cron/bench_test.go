package cron_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/cron/crontest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// seedJobs writes n jobs firing every minute (spread over it), as many
// appends in parallel so that the store commits them in groups.
func seedJobs(b *testing.B, store *embedded.Store, n int, at time.Time) {
	ctx := context.Background()
	ids := make(chan int)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := fmt.Sprintf("%012x", i)
				spec := schema.JobSpec{Name: id, Schedule: "every 1m", Prompt: "p", Deliver: "none", CatchUp: "once", OnCrash: "retry"}
				env := schema.MustEnvelope(schema.Meta{Time: at.Add(time.Duration(i) * 5 * time.Millisecond)}, schema.JobCreated{ID: id, JobSpec: spec, Enabled: true, CreatedBy: "cli"})
				if _, err := store.Append(ctx, cron.JobStream(id), events.NoStream, env); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	for from := 0; from < n; from += 1000 {
		var envs []schema.Envelope
		for i := from; i < min(from+1000, n); i++ {
			id := fmt.Sprintf("%012x", i)
			envs = append(envs, schema.MustEnvelope(schema.Meta{Time: at}, schema.JobListed{ID: id, Stream: cron.JobStream(id)}))
		}
		if _, err := store.Append(ctx, cron.IndexStream, events.Any, envs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTenThousandJobs loads 10,000 jobs into a scheduler and reports
// the memory it holds for them (runtime.MemStats, after a GC); then each
// op is one tick of the clock that makes all 10,000 due at once: each is
// claimed at its exact revision, run (an instant agent) and finished
// through the embedded store, and set to its next slot. The baseline is
// the store alone doing the same appends (a start and an end per job at
// exact revisions, 64 writers).
func BenchmarkTenThousandJobs(b *testing.B) {
	b.Run("scheduler", benchScheduler)
	b.Run("store-only", benchStoreOnly)
}

func benchStoreOnly(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	seedJobs(b, store, n, start)
	ctx := context.Background()
	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		ids := make(chan int)
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range ids {
					stream := cron.JobStream(fmt.Sprintf("%012x", k))
					rev := uint64(2 * i)
					run := fmt.Sprintf("r-%d", i)
					st := schema.MustEnvelope(schema.Meta{}, schema.JobRunStarted{RunID: run, ScheduledFor: start, Attempt: 1, Trigger: schema.TriggerSchedule})
					if _, err := store.Append(ctx, stream, events.Exact(rev), st); err != nil {
						b.Error(err)
					}
					fin := schema.MustEnvelope(schema.Meta{}, schema.JobRunFinished{RunID: run, Status: schema.RunOK, Output: "done: x"})
					if _, err := store.Append(ctx, stream, events.Exact(rev+1), fin); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for k := range n {
			ids <- k
		}
		close(ids)
		wg.Wait()
	}
	elapsed := time.Since(began)
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n*b.N), "ns/run")
}

func benchScheduler(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	seedJobs(b, store, n, start)
	clock := crontest.NewClock(start.Add(50 * time.Second))
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	jobs := cron.NewJobs(store, clock.Now)
	s := cron.New(store, jobs, sys, cron.Config{Clock: clock, Agent: &stubAgent{}, MaxConcurrent: 64, OutputDir: filepath.Join(dir, "out")})
	ctx, cancel := context.WithCancel(context.Background())
	loadStart := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-s.Ready()
	idle := func(now time.Time) bool {
		st, err := s.Stats()
		return err == nil && st.Timed == n && st.Running == 0 && st.Waiting == 0 && st.Next.After(now)
	}
	for !idle(clock.Now()) {
		time.Sleep(10 * time.Millisecond)
	}
	load := time.Since(loadStart)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)

	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		now := start.Add(time.Duration(i+1)*time.Minute + 50*time.Second)
		clock.Set(now)
		for !idle(now) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(heap/n, "heap-B/job")
	b.ReportMetric(heap/(1<<20), "heap-MB")
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n*b.N), "ns/run")
}
