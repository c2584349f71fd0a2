package cron

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// BenchmarkTick is the scheduler's own work per slot fired, with 10,000
// jobs in its timer: take the earliest job off the heap, plan its claim,
// fold the run's start and end (envelopes built as for the store), and
// put the job back at its next slot. The store's append is not in it
// (BenchmarkTenThousandJobs has the whole path).
func BenchmarkTick(b *testing.B) {
	const n = 10_000
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	tm := newTimers()
	byID := make(map[string]*Job, n)
	rev := map[string]uint64{}
	apply := func(j *Job, at time.Time, p schema.Payload) {
		env := schema.MustEnvelope(schema.Meta{Time: at}, p)
		if err := j.Apply(events.Recorded{Envelope: env, Stream: JobStream(j.ID), Revision: rev[j.ID]}); err != nil {
			b.Fatal(err)
		}
		rev[j.ID]++
	}
	for i := range n {
		id := fmt.Sprintf("job%07d", i)
		j := NewJob(id)
		// every minute, the jobs spread over it
		apply(j, start.Add(time.Duration(i)*6*time.Millisecond), schema.JobCreated{ID: id, Enabled: true,
			JobSpec: schema.JobSpec{Name: id, Schedule: "every 1m", Prompt: "p", Deliver: "none", CatchUp: "once", OnCrash: "retry"}})
		byID[id] = j
		tm.set(id, j.NextSlot())
	}
	b.ReportAllocs()
	b.ResetTimer()
	fired := 0
	for b.Loop() {
		now := tm.next()
		for _, id := range tm.popDue(now) {
			j := byID[id]
			c, err := j.Due(now, schema.JobRunStarted{RunID: "r"})
			if err != nil {
				b.Fatal(err)
			}
			apply(j, now, *c.Run)
			apply(j, now, schema.JobRunFinished{RunID: "r", Status: schema.RunOK})
			tm.set(id, j.NextSlot())
			fired++
		}
	}
	b.ReportMetric(float64(fired)/float64(b.N), "slots/op")
	b.ReportMetric(float64(tm.len()), "jobs")
}
