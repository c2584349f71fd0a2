package schema

import "time"

// Scheduled jobs (cron) live in streams of their own: an index stream that
// lists every job, and one stream per job holding its definition, every
// change to it, and every run and delivery. A run is claimed by appending
// JobRunStarted at the job stream's exact revision, so that two schedulers
// on one store never both fire the same slot.

// JobOrigin is the chat a job was created from (through the cronjob tool
// in a gateway session): where deliver "origin" sends its output.
type JobOrigin struct {
	Platform string `json:"platform"`
	Chat     string `json:"chat"`
	Thread   string `json:"thread,omitempty"`
	// SessionID is the session whose tool call created the job.
	SessionID string `json:"session_id,omitempty"`
}

// JobSpec is what a job is: when it runs, what it does, with which tools,
// and where its output goes. JobCreated and JobUpdated carry it whole.
type JobSpec struct {
	Name string `json:"name"`
	// Schedule is canonical: a 5-field cron expression, an interval
	// ("every 30m"), or for a one-shot the RFC 3339 time it runs at.
	Schedule string `json:"schedule"`
	// Timezone is the IANA zone cron expressions are read in ("": the
	// scheduler's local zone).
	Timezone string `json:"timezone,omitempty"`
	// Prompt is what the fresh session of a run is asked.
	Prompt string `json:"prompt,omitempty"`
	// Script is a shell command run first: its output is handed to the
	// model with the prompt, or with NoAgent delivered as it is.
	Script  string `json:"script,omitempty"`
	NoAgent bool   `json:"no_agent,omitempty"`
	// Toolsets restrict the run's tools (empty: the configured ones).
	Toolsets []string `json:"toolsets,omitempty"`
	// Model overrides the configured model for the job's runs.
	Model string `json:"model,omitempty"`
	// Deliver is origin, local (a file under $HERMES_HOME/cron/output),
	// none, or PLATFORM:CHAT[:THREAD]; several are separated by commas.
	Deliver string     `json:"deliver"`
	Origin  *JobOrigin `json:"origin,omitempty"`
	// CatchUp is what runs after downtime missed slots: skip, once or all.
	CatchUp string `json:"catch_up"`
	// OnCrash is what a run cut short by a crash leads to: retry (once)
	// or fail.
	OnCrash string `json:"on_crash"`
	// TimeoutSeconds bounds a run (0: the configured default).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// MaxCostUSD caps the cost of one run (0: only the global caps).
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}

// JobCreated opens a job's stream.
type JobCreated struct {
	ID string `json:"id"`
	JobSpec
	// Enabled is false for a job created paused.
	Enabled bool `json:"enabled"`
	// CreatedBy is cli or tool.
	CreatedBy string `json:"created_by"`
}

// JobListed records a job in the index stream, so that a scheduler finds
// every job on start without reading the whole log.
type JobListed struct {
	ID     string `json:"id"`
	Stream string `json:"stream"`
	Name   string `json:"name,omitempty"`
}

// JobUpdated replaces a job's definition; Changed names the fields that
// differ from the previous one.
type JobUpdated struct {
	JobSpec
	Changed []string `json:"changed"`
}

// JobPaused stops a job from firing until it is resumed.
type JobPaused struct {
	Reason string `json:"reason,omitempty"`
}

// JobResumed lets a paused job fire again, from its next slot on.
type JobResumed struct{}

// JobRemoved ends a job. Its stream stays: the history is kept.
type JobRemoved struct {
	Reason string `json:"reason,omitempty"`
}

// RunOwner names the process that runs a claimed run, so that a run left
// open by a process that died can be told from one still running.
type RunOwner struct {
	Host  string `json:"host,omitempty"`
	PID   int    `json:"pid"`
	Nonce string `json:"nonce,omitempty"`
}

// Triggers of a run (JobRunStarted.Trigger).
const (
	TriggerSchedule = "schedule"
	TriggerCatchUp  = "catch_up"
	TriggerRetry    = "retry"
	TriggerManual   = "manual"
)

// JobRunStarted claims a slot of a job and starts a run of it.
type JobRunStarted struct {
	RunID string `json:"run_id"`
	// ScheduledFor is the slot the run is for (for a manual run, when it
	// was asked for).
	ScheduledFor time.Time `json:"scheduled_for"`
	// Attempt is 1, or 2 for the retry of a run a crash cut short.
	Attempt int `json:"attempt"`
	// Trigger is schedule, catch_up, retry or manual.
	Trigger string `json:"trigger"`
	// SessionID is the fresh session the run's prompt runs in ("" for a
	// script-only job).
	SessionID string    `json:"session_id,omitempty"`
	Owner     *RunOwner `json:"owner,omitempty"`
}

// Statuses of a finished run (JobRunFinished.Status).
const (
	RunOK          = "ok"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunSilent      = "silent"
	RunSkipped     = "skipped"
)

// JobRunFinished closes a run.
type JobRunFinished struct {
	RunID string `json:"run_id"`
	// Status is ok, failed, interrupted (a crash or a stop cut it short),
	// silent (the answer was [SILENT] or a script printed nothing: nothing
	// is delivered) or skipped (the job was paused or removed meanwhile).
	Status     string  `json:"status"`
	Error      string  `json:"error,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	DurationMS int64   `json:"duration_ms,omitempty"`
	// Output is what is delivered (the answer, or a script's output).
	Output string `json:"output,omitempty"`
}

// JobRunMissed reports slots that passed while no scheduler ran and that
// the job's catch-up policy does not run.
type JobRunMissed struct {
	// Count is exact up to 100,000 slots; past that (a minutely cron
	// expression after months of downtime) it is a lower bound.
	Count  int       `json:"count"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Policy string    `json:"policy"`
}

// JobDelivered records that a run's output reached one of its targets.
type JobDelivered struct {
	RunID  string `json:"run_id"`
	Target string `json:"target"`
	// Path is the file written for a local target.
	Path               string   `json:"path,omitempty"`
	PlatformMessageIDs []string `json:"platform_message_ids,omitempty"`
}

// JobDeliveryFailed records that a run's output could not reach a target.
type JobDeliveryFailed struct {
	RunID  string `json:"run_id"`
	Target string `json:"target"`
	Error  string `json:"error"`
	// Attempt numbers the delivery attempt that failed (0: the first,
	// before attempts were counted); Retry says another attempt follows
	// (cron.delivery_attempts), so that the delivery is still pending.
	Attempt int  `json:"attempt,omitempty"`
	Retry   bool `json:"retry,omitempty"`
}

// Event type names, as EventType returns them and envelopes carry them:
// compare with these, not with literals, so a renamed event breaks the build.
const (
	TypeJobCreated        = "JobCreated"
	TypeJobListed         = "JobListed"
	TypeJobUpdated        = "JobUpdated"
	TypeJobPaused         = "JobPaused"
	TypeJobResumed        = "JobResumed"
	TypeJobRemoved        = "JobRemoved"
	TypeJobRunStarted     = "JobRunStarted"
	TypeJobRunFinished    = "JobRunFinished"
	TypeJobRunMissed      = "JobRunMissed"
	TypeJobDelivered      = "JobDelivered"
	TypeJobDeliveryFailed = "JobDeliveryFailed"
)

func (JobCreated) EventType() string        { return TypeJobCreated }
func (JobListed) EventType() string         { return TypeJobListed }
func (JobUpdated) EventType() string        { return TypeJobUpdated }
func (JobPaused) EventType() string         { return TypeJobPaused }
func (JobResumed) EventType() string        { return TypeJobResumed }
func (JobRemoved) EventType() string        { return TypeJobRemoved }
func (JobRunStarted) EventType() string     { return TypeJobRunStarted }
func (JobRunFinished) EventType() string    { return TypeJobRunFinished }
func (JobRunMissed) EventType() string      { return TypeJobRunMissed }
func (JobDelivered) EventType() string      { return TypeJobDelivered }
func (JobDeliveryFailed) EventType() string { return TypeJobDeliveryFailed }
