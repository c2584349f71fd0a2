package cron

import (
	"errors"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// Why a job has nothing to claim now.
var (
	// ErrInactive: the job is paused, removed or its schedule is broken.
	ErrInactive = errors.New("the job is not active")
	// ErrBusy: a run of the job is still open (running, or delivering).
	ErrBusy = errors.New("a run of this job is still open")
)

// NotDueError says when the job is due next (zero: never again).
type NotDueError struct{ Next time.Time }

func (e *NotDueError) Error() string {
	if e.Next.IsZero() {
		return "the job has no slot left"
	}
	return "the job is next due at " + e.Next.Format(time.RFC3339)
}

// MaxCatchUpAll bounds how many missed slots catch_up all runs after
// downtime; older ones are reported missed.
const MaxCatchUpAll = 50

// maxEnumerate bounds how many missed slots are counted one by one.
const maxEnumerate = 100_000

// Claim is what a scheduler appends to the job's stream to act on a due
// job: a run started, missed slots reported, or both.
type Claim struct {
	Payloads []schema.Payload
	// Run is nil when nothing runs (catch_up skip).
	Run *schema.JobRunStarted
}

// Due plans what is due of j at now. run carries the new run's ids and
// owner; the plan fills in its slot, attempt and trigger.
func (j *Job) Due(now time.Time, run schema.JobRunStarted) (Claim, error) {
	if !j.Active() {
		return Claim{}, ErrInactive
	}
	if len(j.Open) > 0 {
		return Claim{}, ErrBusy
	}
	if r := j.Retry; r != nil {
		run.ScheduledFor, run.Attempt, run.Trigger = r.ScheduledFor, r.Attempt, schema.TriggerRetry
		return Claim{Payloads: []schema.Payload{run}, Run: &run}, nil
	}
	after := maxTime(j.Base, j.LastSlot)
	first := j.sched.Next(after)
	if first.IsZero() || first.After(now) {
		return Claim{}, &NotDueError{Next: first}
	}
	count, tail := dueSlots(j.sched, after, now, MaxCatchUpAll)
	last := tail[len(tail)-1]
	run.Attempt = 1
	if count == 1 && now.Sub(first) <= Grace(j.sched, first) {
		run.ScheduledFor, run.Trigger = first, schema.TriggerSchedule
		return Claim{Payloads: []schema.Payload{run}, Run: &run}, nil
	}
	missed := func(n int, until time.Time) schema.Payload {
		return schema.JobRunMissed{Count: n, First: first, Last: until, Policy: j.Spec.CatchUp}
	}
	run.Trigger = schema.TriggerCatchUp
	switch j.Spec.CatchUp {
	case CatchUpSkip:
		return Claim{Payloads: []schema.Payload{missed(count, last)}}, nil
	case CatchUpAll:
		if count > len(tail) {
			// The oldest are not run: only the last MaxCatchUpAll are.
			run.ScheduledFor = tail[0]
			before := slotBefore(j.sched, after, tail[0])
			return Claim{Payloads: []schema.Payload{missed(count-len(tail), before), run}, Run: &run}, nil
		}
		run.ScheduledFor = tail[0]
		return Claim{Payloads: []schema.Payload{run}, Run: &run}, nil
	default: // once
		run.ScheduledFor = last
		if count == 1 {
			return Claim{Payloads: []schema.Payload{run}, Run: &run}, nil
		}
		return Claim{Payloads: []schema.Payload{missed(count-1, tail[len(tail)-2]), run}, Run: &run}, nil
	}
}

// Manual plans a run asked for now (hermes cron run, the tool's run).
func (j *Job) Manual(now time.Time, run schema.JobRunStarted) (Claim, error) {
	switch {
	case !j.Exists():
		return Claim{}, fmt.Errorf("no job %s", j.ID)
	case j.Removed:
		return Claim{}, fmt.Errorf("job %s was removed", j.ID)
	case j.Paused:
		return Claim{}, fmt.Errorf("job %s is paused: resume it first", j.ID)
	case len(j.Open) > 0:
		return Claim{}, ErrBusy
	}
	run.ScheduledFor, run.Attempt, run.Trigger = now, 1, schema.TriggerManual
	return Claim{Payloads: []schema.Payload{run}, Run: &run}, nil
}

// Grace is how late a slot may fire and still count as on time: half the
// schedule's period, between a minute and two hours (five minutes for a
// one-shot). A slot later than that was missed, and the job's catch-up
// policy decides.
func Grace(s Schedule, slot time.Time) time.Duration {
	if s.Kind() == KindOnce {
		return 5 * time.Minute
	}
	a := s.Next(slot)
	b := s.Next(a)
	if a.IsZero() || b.IsZero() {
		return time.Minute
	}
	return min(max(b.Sub(a)/2, time.Minute), 2*time.Hour)
}

// dueSlots counts the slots in (after, now] and returns the last n of
// them (at least two when there are two). Past maxEnumerate slots the
// count stops there and the tail is found near now.
func dueSlots(s Schedule, after, now time.Time, n int) (int, []time.Time) {
	n = max(n, 2)
	ring := make([]time.Time, 0, n)
	count := 0
	for t := s.Next(after); !t.IsZero() && !t.After(now); t = s.Next(t) {
		count++
		if len(ring) == n {
			copy(ring, ring[1:])
			ring = ring[:n-1]
		}
		ring = append(ring, t)
		if count == maxEnumerate {
			tail := tailNear(s, after, now, n)
			if iv, ok := s.(Interval); ok && len(tail) > 0 {
				count = int(tail[len(tail)-1].Sub(s.Next(after))/iv.Every) + 1
			}
			return count, tail
		}
	}
	return count, ring
}

// slotBefore is the last slot after after that comes before t.
func slotBefore(s Schedule, after, t time.Time) time.Time {
	if iv, ok := s.(Interval); ok {
		return t.Add(-iv.Every)
	}
	prev := s.Next(after)
	for n := s.Next(prev); n.Before(t); n = s.Next(n) {
		prev = n
	}
	return prev
}

// tailNear finds the last n slots in (after, now] by looking back from now
// over wider and wider windows.
func tailNear(s Schedule, after, now time.Time, n int) []time.Time {
	var ring []time.Time
	for _, w := range []time.Duration{time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour, 5 * 366 * 24 * time.Hour} {
		start := maxTime(after, now.Add(-w))
		ring = ring[:0]
		for t := s.Next(start); !t.IsZero() && !t.After(now); t = s.Next(t) {
			if len(ring) == n {
				copy(ring, ring[1:])
				ring = ring[:n-1]
			}
			ring = append(ring, t)
		}
		if len(ring) >= n || start.Equal(after) {
			break
		}
	}
	return ring
}
