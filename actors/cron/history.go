package cron

import (
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Entry is one line of a job's history: a change to the job, a run (with
// how it ended and where its output went), or slots reported missed.
type Entry struct {
	At time.Time `json:"at"`
	// Kind is created, updated, paused, resumed, removed, run or missed.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	Run    *Run   `json:"run,omitempty"`
}

// History reads a job's stream into its history, oldest first.
func History(rs []events.Recorded) ([]Entry, error) {
	var out []Entry
	runs := map[string]int{}
	job := NewJob("")
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		if err := job.Apply(r); err != nil {
			return nil, err
		}
		run := func(id string) *Run {
			if i, ok := runs[id]; ok {
				return out[i].Run
			}
			return nil
		}
		switch e := p.(type) {
		case schema.JobCreated:
			state := "active"
			if !e.Enabled {
				state = "paused"
			}
			out = append(out, Entry{At: r.Time, Kind: "created", Detail: fmt.Sprintf("%q, %s, by %s (%s)", e.Name, e.Schedule, e.CreatedBy, state)})
		case schema.JobUpdated:
			out = append(out, Entry{At: r.Time, Kind: "updated", Detail: strings.Join(e.Changed, ", ")})
		case schema.JobPaused:
			out = append(out, Entry{At: r.Time, Kind: "paused", Detail: e.Reason})
		case schema.JobResumed:
			out = append(out, Entry{At: r.Time, Kind: "resumed"})
		case schema.JobRemoved:
			out = append(out, Entry{At: r.Time, Kind: "removed", Detail: e.Reason})
		case schema.JobRunMissed:
			d := fmt.Sprintf("%d slot(s) from %s to %s not run (catch_up %s)", e.Count, e.First.Format(time.RFC3339), e.Last.Format(time.RFC3339), e.Policy)
			if e.Count == 1 {
				d = fmt.Sprintf("slot %s not run (catch_up %s)", e.First.Format(time.RFC3339), e.Policy)
			}
			out = append(out, Entry{At: r.Time, Kind: "missed", Detail: d})
		case schema.JobRunStarted:
			runs[e.RunID] = len(out)
			out = append(out, Entry{At: r.Time, Kind: "run", Run: &Run{ID: e.RunID, ScheduledFor: e.ScheduledFor, Attempt: e.Attempt, Trigger: e.Trigger,
				SessionID: e.SessionID, Owner: e.Owner, StartedAt: r.Time, Outcomes: map[string]Outcome{}}})
		case schema.JobRunFinished:
			if x := run(e.RunID); x != nil && !x.Finished {
				x.Finished, x.FinishedAt, x.Status, x.Error, x.CostUSD, x.DurationMS, x.Output = true, r.Time, e.Status, e.Error, e.CostUSD, e.DurationMS, e.Output
				if deliverable(e.Status) {
					x.Targets = job.targets()
				}
			}
		case schema.JobDelivered:
			if x := run(e.RunID); x != nil {
				x.Outcomes[e.Target] = Outcome{Delivered: true, Path: e.Path, At: r.Time}
			}
		case schema.JobDeliveryFailed:
			if x := run(e.RunID); x != nil {
				x.failed(e, r.Time)
			}
		}
	}
	return out, nil
}

// Deliveries says in one line where a run's output went.
func (r *Run) Deliveries() string {
	if !r.Finished {
		return ""
	}
	if len(r.Targets) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range r.Targets {
		o, ok := r.Outcomes[t.String()]
		switch {
		case !ok && r.Attempts[t.String()] > 0:
			parts = append(parts, fmt.Sprintf("%s: pending, %d attempt(s) failed (%s)", t, r.Attempts[t.String()], r.Failed[t.String()].Error))
		case !ok:
			parts = append(parts, t.String()+": pending")
		case o.Delivered && o.Path != "":
			parts = append(parts, t.String()+": "+o.Path)
		case o.Delivered:
			parts = append(parts, t.String()+": delivered")
		default:
			parts = append(parts, t.String()+": failed ("+o.Error+")")
		}
	}
	return strings.Join(parts, "; ")
}
