// Package cron is Hermes' scheduler: jobs kept as events (one stream per
// job, an index stream listing them), the fold of a job's stream into its
// state and its next slot, and the scheduler actor that fires due jobs
// into fresh sessions and delivers what they answer — to a file, or to a
// chat through the gateway's bus.
//
// A slot is fired exactly once whatever number of schedulers share a
// store: a run is claimed by appending JobRunStarted at the exact revision
// of the job's stream the scheduler decided on, and a scheduler that loses
// the race reads what won and moves on.
package cron

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// IndexStream lists every job (JobListed).
const IndexStream = "cron-jobs"

const jobPrefix = "cron-job-"

// JobStream is the stream of job id.
func JobStream(id string) string { return jobPrefix + id }

// JobOf is the job id of a job stream, or "".
func JobOf(stream string) string {
	if id, ok := strings.CutPrefix(stream, jobPrefix); ok {
		return id
	}
	return ""
}

// Job is a job's state, folded from its stream.
type Job struct {
	ID        string
	Spec      schema.JobSpec
	CreatedAt time.Time
	CreatedBy string
	Paused    bool
	Reason    string // why it was paused or removed
	Removed   bool
	// Revision is the last revision of the job's stream folded.
	Revision uint64
	// Base is when slots start to count: creation, the last change of
	// schedule, the last resume. Anchor is where an interval's grid
	// starts.
	Base, Anchor time.Time
	// LastSlot is the latest scheduled slot run or reported missed.
	LastSlot time.Time
	// Open are the runs not closed: not finished, or finished with
	// targets still waiting for a delivery outcome.
	Open map[string]*Run
	// Last is the run that finished last.
	Last *Run
	// Retry is the attempt a crash calls for (on_crash retry).
	Retry *Retry
	// Runs counts runs started.
	Runs int

	sched    Schedule
	schedErr error
}

// Run is one run of a job.
type Run struct {
	ID           string           `json:"id"`
	ScheduledFor time.Time        `json:"scheduled_for"`
	Attempt      int              `json:"attempt"`
	Trigger      string           `json:"trigger"`
	SessionID    string           `json:"session_id,omitempty"`
	Owner        *schema.RunOwner `json:"owner,omitempty"`
	StartedAt    time.Time        `json:"started_at"`
	Finished     bool             `json:"finished"`
	FinishedAt   time.Time        `json:"finished_at,omitzero"`
	Status       string           `json:"status,omitempty"`
	Error        string           `json:"error,omitempty"`
	CostUSD      float64          `json:"cost_usd,omitempty"`
	DurationMS   int64            `json:"duration_ms,omitempty"`
	// Output is kept while deliveries are pending.
	Output string `json:"output,omitempty"`
	// Targets are where the output goes; Outcomes what happened there.
	Targets  []Target           `json:"-"`
	Outcomes map[string]Outcome `json:"deliveries,omitempty"`
	// Failed is the last failed attempt of each delivery that is retried
	// (still pending), Attempts how many attempts of it failed so far.
	Failed   map[string]Outcome `json:"failed_attempts,omitempty"`
	Attempts map[string]int     `json:"attempts,omitempty"`
}

// DeliveryBackoff is the wait after failed attempt n (1, 2, …) of a
// delivery before the next: one minute, doubling, at most half an hour.
func DeliveryBackoff(n int) time.Duration {
	if n < 1 {
		return 0
	}
	return min(time.Minute<<min(n-1, 5), 30*time.Minute)
}

// NextAttempt is the number of target's next delivery attempt and when it
// is due (zero: now).
func (r *Run) NextAttempt(target string) (int, time.Time) {
	n := r.Attempts[target]
	if n == 0 {
		return 1, time.Time{}
	}
	return n + 1, r.Failed[target].At.Add(DeliveryBackoff(n))
}

// Result is how the run ended for people: its status, and for a run that
// went well, whether its output reached everywhere it was to go ("ok" only
// when it did; "ok, delivery failed"; "ok, delivering" while pending).
func (r *Run) Result() string {
	if !r.Finished {
		return "running"
	}
	if r.Status != schema.RunOK {
		return r.Status
	}
	pending := false
	for _, t := range r.Targets {
		o, ok := r.Outcomes[t.String()]
		if ok && !o.Delivered {
			return "ok, delivery failed"
		}
		pending = pending || !ok
	}
	if pending {
		return "ok, delivering"
	}
	return "ok"
}

// failed applies a JobDeliveryFailed to the run.
func (r *Run) failed(e schema.JobDeliveryFailed, at time.Time) {
	if e.Retry {
		if r.Failed == nil {
			r.Failed, r.Attempts = map[string]Outcome{}, map[string]int{}
		}
		r.Failed[e.Target] = Outcome{Error: e.Error, At: at}
		r.Attempts[e.Target]++
		return
	}
	r.Outcomes[e.Target] = Outcome{Error: e.Error, At: at}
}

// Outcome is what became of a delivery to one target.
type Outcome struct {
	Delivered bool      `json:"delivered"`
	Path      string    `json:"path,omitempty"`
	Error     string    `json:"error,omitempty"`
	At        time.Time `json:"at"`
}

// Pending lists the targets still without an outcome.
func (r *Run) Pending() []Target {
	var out []Target
	for _, t := range r.Targets {
		if _, ok := r.Outcomes[t.String()]; !ok {
			out = append(out, t)
		}
	}
	return out
}

// Retry is an attempt owed to a slot whose run a crash cut short.
type Retry struct {
	ScheduledFor time.Time
	Attempt      int
	Trigger      string
}

// NewJob returns the empty state a job's stream folds into.
func NewJob(id string) *Job { return &Job{ID: id, Open: map[string]*Run{}} }

// Schedule is the job's parsed schedule (nil with the reason when its
// stored form no longer loads, such as a time zone this machine lacks).
func (j *Job) Schedule() (Schedule, error) { return j.sched, j.schedErr }

// Exists reports whether the job's stream was created.
func (j *Job) Exists() bool { return !j.CreatedAt.IsZero() }

// Active reports whether the job may fire.
func (j *Job) Active() bool { return j.Exists() && !j.Paused && !j.Removed && j.sched != nil }

// Apply folds one event of the job's stream.
func (j *Job) Apply(r events.Recorded) error {
	p, err := schema.Decode(r.Envelope)
	if err != nil {
		return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
	}
	j.Revision = r.Revision
	at := r.Time
	switch e := p.(type) {
	case schema.JobCreated:
		j.Spec, j.CreatedAt, j.CreatedBy, j.Paused = e.JobSpec, at, e.CreatedBy, !e.Enabled
		j.Base, j.Anchor = at, at
		j.load()
	case schema.JobUpdated:
		prev := j.Spec
		j.Spec = e.JobSpec
		if prev.Schedule != e.Schedule || prev.Timezone != e.Timezone {
			j.Base, j.Anchor = at, at
		}
		j.load()
	case schema.JobPaused:
		j.Paused, j.Reason = true, e.Reason
	case schema.JobResumed:
		j.Paused, j.Reason = false, ""
		if j.sched == nil || j.sched.Kind() != KindOnce {
			// Slots that passed while paused are not owed.
			j.Base = maxTime(j.Base, at)
		}
	case schema.JobRemoved:
		j.Removed, j.Reason = true, e.Reason
	case schema.JobRunStarted:
		j.Runs++
		j.Open[e.RunID] = &Run{ID: e.RunID, ScheduledFor: e.ScheduledFor, Attempt: e.Attempt, Trigger: e.Trigger,
			SessionID: e.SessionID, Owner: e.Owner, StartedAt: at, Outcomes: map[string]Outcome{}}
		switch e.Trigger {
		case schema.TriggerSchedule, schema.TriggerCatchUp:
			j.LastSlot = maxTime(j.LastSlot, e.ScheduledFor)
		case schema.TriggerRetry:
			j.Retry = nil
		}
	case schema.JobRunFinished:
		run, ok := j.Open[e.RunID]
		if !ok {
			return nil // finished twice (a race the claim protocol lost)
		}
		run.Finished, run.FinishedAt, run.Status, run.Error = true, at, e.Status, e.Error
		run.CostUSD, run.DurationMS, run.Output = e.CostUSD, e.DurationMS, e.Output
		if deliverable(e.Status) {
			run.Targets = j.targets()
		}
		j.Last = run
		if e.Status == schema.RunInterrupted && j.Spec.OnCrash != OnCrashFail && run.Attempt < 2 {
			j.Retry = &Retry{ScheduledFor: run.ScheduledFor, Attempt: run.Attempt + 1, Trigger: run.Trigger}
		}
		j.closeIfDone(run)
	case schema.JobRunMissed:
		j.LastSlot = maxTime(j.LastSlot, e.Last)
	case schema.JobDelivered:
		if run, ok := j.Open[e.RunID]; ok {
			run.Outcomes[e.Target] = Outcome{Delivered: true, Path: e.Path, At: at}
			j.closeIfDone(run)
		}
	case schema.JobDeliveryFailed:
		if run, ok := j.Open[e.RunID]; ok {
			run.failed(e, at)
			j.closeIfDone(run)
		}
	}
	return nil
}

func (j *Job) load() {
	j.sched, j.schedErr = LoadSchedule(j.Spec.Schedule, j.Spec.Timezone, j.Anchor)
}

// targets resolves the job's delivery targets as they are now; a bad one
// (which validation refuses) is kept so that its delivery fails visibly.
func (j *Job) targets() []Target {
	ts, err := ParseTargets(j.Spec.Deliver, j.Spec.Origin)
	if err != nil {
		return []Target{{Kind: TargetInvalid, Raw: j.Spec.Deliver, Err: err.Error()}}
	}
	return ts
}

func (j *Job) closeIfDone(run *Run) {
	if run.Finished && len(run.Pending()) == 0 {
		delete(j.Open, run.ID)
		run.Output = ""
	}
}

func deliverable(status string) bool { return status == schema.RunOK || status == schema.RunFailed }

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// NextSlot is the next scheduled slot after those already handled (zero:
// none, such as a one-shot that ran).
func (j *Job) NextSlot() time.Time {
	if j.sched == nil {
		return time.Time{}
	}
	return j.sched.Next(maxTime(j.Base, j.LastSlot))
}

// Clone copies the job deeply enough for a reader to keep it while the
// original folds on.
func (j *Job) Clone() *Job {
	c := *j
	c.Spec.Toolsets = slices.Clone(j.Spec.Toolsets)
	c.Open = make(map[string]*Run, len(j.Open))
	for id, r := range j.Open {
		c.Open[id] = r.clone()
	}
	if j.Last != nil {
		if r, ok := c.Open[j.Last.ID]; ok {
			c.Last = r
		} else {
			c.Last = j.Last.clone()
		}
	}
	if j.Retry != nil {
		r := *j.Retry
		c.Retry = &r
	}
	return &c
}

func (r *Run) clone() *Run {
	c := *r
	c.Targets = slices.Clone(r.Targets)
	c.Outcomes = make(map[string]Outcome, len(r.Outcomes))
	for k, v := range r.Outcomes {
		c.Outcomes[k] = v
	}
	return &c
}

// State is a job's state in one word: active, paused, removed, done (a
// one-shot that ran) or broken (its schedule no longer loads).
func (j *Job) State() string {
	switch {
	case j.Removed:
		return "removed"
	case j.schedErr != nil:
		return "broken"
	case j.Paused:
		return "paused"
	case j.Retry == nil && len(j.Open) == 0 && j.NextSlot().IsZero():
		return "done"
	}
	return "active"
}

// Catch-up policies and crash policies.
const (
	CatchUpSkip = "skip"
	CatchUpOnce = "once"
	CatchUpAll  = "all"

	OnCrashRetry = "retry"
	OnCrashFail  = "fail"
)

// Target is one place a run's output goes.
type Target struct {
	// Kind is local, none, platform or invalid.
	Kind                   string
	Platform, Chat, Thread string
	// Origin is set when the target came from deliver "origin".
	Origin bool
	// Home is set when the target is a platform alone: its home channel
	// (the last /sethome there), found when the run is delivered.
	Home bool
	Raw  string
	Err  string
}

// Kinds of target.
const (
	TargetLocal    = "local"
	TargetPlatform = "platform"
	TargetInvalid  = "invalid"
)

// String names the target as JobDelivered.Target records it.
func (t Target) String() string {
	switch t.Kind {
	case TargetPlatform:
		if t.Home {
			return t.Platform
		}
		s := t.Platform + ":" + t.Chat
		if t.Thread != "" {
			s += ":" + t.Thread
		}
		return s
	case TargetInvalid:
		return t.Raw
	}
	return t.Kind
}

// ParseTargets reads a deliver value: a comma-separated list of origin,
// local (file is an alias), none, PLATFORM:CHAT[:THREAD], and PLATFORM
// alone (its home channel, set with /sethome in a chat). origin becomes
// the chat the job was created from.
func ParseTargets(deliver string, origin *schema.JobOrigin) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	parts := strings.Split(deliver, ",")
	for _, raw := range parts {
		p := strings.TrimSpace(raw)
		var t Target
		switch strings.ToLower(p) {
		case "none":
			if len(parts) > 1 {
				return nil, fmt.Errorf("deliver %q: none cannot be combined with other targets", deliver)
			}
			return nil, nil
		case "local", "file":
			t = Target{Kind: TargetLocal}
		case "origin":
			if origin == nil || origin.Platform == "" || origin.Chat == "" {
				return nil, fmt.Errorf("deliver origin: this job was not created from a chat, so it has no origin; use PLATFORM:CHAT (such as telegram:111111), local or none")
			}
			t = Target{Kind: TargetPlatform, Platform: origin.Platform, Chat: origin.Chat, Thread: origin.Thread, Origin: true}
		case "":
			return nil, fmt.Errorf("deliver %q has an empty target: use origin, local, none or PLATFORM:CHAT", deliver)
		default:
			name, rest, hasChat := strings.Cut(p, ":")
			if !hasChat && platformName(name) {
				t = Target{Kind: TargetPlatform, Platform: strings.ToLower(name), Home: true}
				break
			}
			chat, thread, bad := splitChat(rest)
			if !platformName(name) || bad {
				return nil, fmt.Errorf("unknown delivery target %q: use origin, local, none, PLATFORM:CHAT[:THREAD] (such as telegram:111111) or PLATFORM (its home channel)", p)
			}
			t = Target{Kind: TargetPlatform, Platform: strings.ToLower(name), Chat: chat, Thread: thread}
		}
		if !seen[t.String()] {
			seen[t.String()] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// splitChat splits CHAT[:THREAD]. A Matrix room id (!opaque:server, the
// server with an optional port) holds colons; its threads are event ids,
// which start with $.
func splitChat(rest string) (chat, thread string, bad bool) {
	if strings.HasPrefix(rest, "!") {
		chat = rest
		if i := strings.Index(rest, ":$"); i >= 0 {
			chat, thread = rest[:i], rest[i+1:]
		}
		return chat, thread, !strings.Contains(chat, ":") || thread == "$"
	}
	chat, thread, has := strings.Cut(rest, ":")
	return chat, thread, chat == "" || has && (thread == "" || strings.Contains(thread, ":"))
}

func platformName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, r := range strings.ToLower(s) {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
