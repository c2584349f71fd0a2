// Package cronjob is Hermes' cronjob tool: the agent schedules work
// itself ("remind me every weekday at 9 to check the build") and lists,
// changes, pauses, resumes, removes and runs its jobs. One tool with an
// action argument, as Hermes has it; the jobs are the scheduler's
// (actors/cron), kept as events.
package cronjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Runner runs a job now (the scheduler).
type Runner interface {
	RunNow(ctx context.Context, ref string) (*cron.Run, error)
}

// Tool is the cronjob tool.
type Tool struct {
	Jobs  *cron.Jobs
	Store events.Store
	// Rules check what a job may name (toolsets, command_allowlist).
	Rules func() cron.Rules
	// Origin finds the chat a session talks to (nil, or nil result: none).
	Origin func(ctx context.Context, sessionID string) (*schema.JobOrigin, error)
	// AllowNested lets a job's own runs create jobs (cron.allow_nested).
	AllowNested bool
	// RunWait is how long action run waits for the run before answering
	// that it goes on (default 60 s).
	RunWait time.Duration

	mu     sync.Mutex
	runner Runner
}

// SetRunner sets what action run uses (the scheduler, once it exists).
func (t *Tool) SetRunner(r Runner) {
	t.mu.Lock()
	t.runner = r
	t.mu.Unlock()
}

// Spec implements tool.Tool.
func (t *Tool) Spec() model.ToolSpec {
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return model.ToolSpec{Name: "cronjob", Description: `Manage scheduled jobs: work that runs later or on a schedule in a fresh session, with its answer delivered to a chat or a file.
action=create needs schedule and prompt (or script); action=list shows the jobs; update, pause, resume, remove and run take job_id (list first: never guess an id).
A job runs with nobody present: its prompt must say everything needed, and it cannot ask questions. Its final answer is delivered automatically; answering exactly [SILENT] delivers nothing.
Jobs cannot create more jobs.`,
		Parameters: map[string]any{"type": "object", "required": []string{"action"}, "properties": map[string]any{
			"action":   map[string]any{"type": "string", "enum": []string{"create", "list", "update", "pause", "resume", "remove", "run"}},
			"job_id":   str("The job's id (or a unique prefix, or its name); required for update, pause, resume, remove and run."),
			"prompt":   str("create/update: the complete, self-contained instruction for each run."),
			"schedule": str(`create/update: "0 9 * * 1-5" (cron: minute hour day month weekday), "every 30m", "every 2h", "in 2h" or "30m" (once), or an ISO time such as "2026-06-01T09:00" (once).`),
			"timezone": str("IANA time zone the schedule is read in, such as Europe/Berlin (default: the machine's)."),
			"name":     str("A short human name for the job."),
			"deliver": str(`Where each run's answer goes. Omit to send it back to this chat (origin) — or, outside a chat, to a local file. ` +
				`Values: origin, local (a file under ~/.hermes/cron/output), none, or PLATFORM:CHAT[:THREAD] such as telegram:111111; several separated by commas.`),
			"script":           str("A shell command run before each run: its output is given to the model with the prompt (or, with no_agent, delivered as it is; no output means nothing is delivered)."),
			"no_agent":         map[string]any{"type": "boolean", "description": "Run only the script and deliver its output, without the model."},
			"enabled_toolsets": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Restrict the runs to these toolsets (such as web, terminal, file). On update, [] clears it."},
			"model":            str("Model for the runs (default: the configured one)."),
			"catch_up":         map[string]any{"type": "string", "enum": []string{"skip", "once", "all"}, "description": "After downtime: skip missed runs, run once (default), or run all."},
			"on_crash":         map[string]any{"type": "string", "enum": []string{"retry", "fail"}, "description": "A run cut short by a crash: retry once (default) or fail."},
			"timeout":          map[string]any{"type": "integer", "description": "Seconds a run may take (default 600)."},
			"max_cost_usd":     map[string]any{"type": "number", "description": "Cost cap of one run in US dollars."},
			"reason":           str("pause/remove: why."),
			"include_disabled": map[string]any{"type": "boolean", "description": "list: include removed jobs."},
		}}}
}

// Flags implements tool.Tool.
func (t *Tool) Flags() tool.Flags { return tool.Flags{} }

type args struct {
	Action          string    `json:"action"`
	JobID           string    `json:"job_id"`
	Prompt          *string   `json:"prompt"`
	Schedule        *string   `json:"schedule"`
	Timezone        *string   `json:"timezone"`
	Name            *string   `json:"name"`
	Deliver         *string   `json:"deliver"`
	Script          *string   `json:"script"`
	NoAgent         *bool     `json:"no_agent"`
	Toolsets        *[]string `json:"enabled_toolsets"`
	Model           modelArg  `json:"model"`
	CatchUp         *string   `json:"catch_up"`
	OnCrash         *string   `json:"on_crash"`
	Timeout         *int      `json:"timeout"`
	MaxCost         *float64  `json:"max_cost_usd"`
	Reason          string    `json:"reason"`
	IncludeDisabled bool      `json:"include_disabled"`
}

// modelArg accepts Hermes' {"model": "…"} form as well as a plain name.
type modelArg struct{ v *string }

func (m *modelArg) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		m.v = &s
		return nil
	}
	var o struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return errors.New(`model: give a name or {"model": "name"}`)
	}
	m.v = &o.Model
	return nil
}

// Run implements tool.Tool.
func (t *Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if t.Jobs == nil {
		return "", errors.New("scheduled jobs are not available in this process")
	}
	env := tool.EnvFrom(ctx)
	action := strings.ToLower(strings.TrimSpace(a.Action))
	if action != "list" && !t.AllowNested && t.fromCron(ctx, env.SessionID) {
		return "", errors.New("a scheduled job's run cannot create or change jobs (cron.allow_nested is off)")
	}
	switch action {
	case "create":
		return t.create(ctx, env, a)
	case "list":
		return t.list(ctx, a.IncludeDisabled)
	case "update", "pause", "resume", "remove", "run":
		if strings.TrimSpace(a.JobID) == "" {
			return "", fmt.Errorf("job_id is required for action %s: call cronjob with action=list to see the jobs", action)
		}
		j, err := t.Jobs.Find(ctx, a.JobID)
		if err != nil {
			return "", err
		}
		return t.onJob(ctx, action, j, a)
	case "":
		return "", errors.New("action is required: create, list, update, pause, resume, remove or run")
	}
	return "", fmt.Errorf("unknown action %q: use create, list, update, pause, resume, remove or run", a.Action)
}

// fromCron reports whether session id is a cron run's.
func (t *Tool) fromCron(ctx context.Context, id string) bool {
	if t.Store == nil || id == "" {
		return false
	}
	rs, err := t.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	if err != nil || len(rs) == 0 {
		return false
	}
	p, err := schema.Decode(rs[0].Envelope)
	if err != nil {
		return false
	}
	s, ok := p.(schema.SessionStarted)
	return ok && s.Source == "cron"
}

func (t *Tool) rules() cron.Rules {
	if t.Rules == nil {
		return cron.Rules{Judge: judge.Check}
	}
	return t.Rules()
}

func apply(s *schema.JobSpec, a args) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.Prompt, a.Prompt)
	set(&s.Schedule, a.Schedule)
	set(&s.Timezone, a.Timezone)
	set(&s.Name, a.Name)
	set(&s.Deliver, a.Deliver)
	set(&s.Script, a.Script)
	set(&s.Model, a.Model.v)
	set(&s.CatchUp, a.CatchUp)
	set(&s.OnCrash, a.OnCrash)
	if a.NoAgent != nil {
		s.NoAgent = *a.NoAgent
	}
	if a.Toolsets != nil {
		s.Toolsets = *a.Toolsets
	}
	if a.Timeout != nil {
		s.TimeoutSeconds = *a.Timeout
	}
	if a.MaxCost != nil {
		s.MaxCostUSD = *a.MaxCost
	}
}

func (t *Tool) create(ctx context.Context, env *tool.Env, a args) (string, error) {
	if a.Schedule == nil || strings.TrimSpace(*a.Schedule) == "" {
		return "", errors.New(`schedule is required for create: such as "0 9 * * 1-5", "every 2h" or "in 30m"`)
	}
	var spec schema.JobSpec
	apply(&spec, a)
	if t.Origin != nil && env.SessionID != "" {
		o, err := t.Origin(ctx, env.SessionID)
		if err != nil {
			return "", fmt.Errorf("find the chat of this session: %w", err)
		}
		spec.Origin = o
	}
	spec, err := cron.Normalize(spec, t.Jobs.Now(), t.rules())
	if err != nil {
		return "", err
	}
	j, err := t.Jobs.Create(ctx, spec, true, "tool")
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("Job %q created (id %s).", j.Spec.Name, j.ID)
	if j.Spec.Deliver == "local" {
		msg += " Its output is saved to a file under the Hermes home (cron/output/" + j.ID + "); it is not sent to any chat. Set deliver to PLATFORM:CHAT to be notified."
	}
	return result(map[string]any{"success": true, "message": msg, "job": format(j)})
}

func (t *Tool) list(ctx context.Context, all bool) (string, error) {
	jobs, err := t.Jobs.Load(ctx)
	if err != nil {
		return "", err
	}
	out := []map[string]any{}
	for _, j := range jobs {
		if j.Removed && !all {
			continue
		}
		out = append(out, format(j))
	}
	return result(map[string]any{"success": true, "count": len(out), "jobs": out})
}

func (t *Tool) onJob(ctx context.Context, action string, j *cron.Job, a args) (string, error) {
	var err error
	switch action {
	case "update":
		j, err = t.Jobs.Update(ctx, j.ID, t.rules(), func(s *schema.JobSpec) error { apply(s, a); return nil })
		if errors.Is(err, cron.ErrNothing) {
			return "", errors.New("nothing to update: give the fields to change (schedule, prompt, deliver, ...)")
		}
	case "pause":
		j, err = t.Jobs.Pause(ctx, j.ID, a.Reason)
	case "resume":
		j, err = t.Jobs.Resume(ctx, j.ID)
	case "remove":
		j, err = t.Jobs.Remove(ctx, j.ID, a.Reason)
		if err == nil {
			return result(map[string]any{"success": true, "message": fmt.Sprintf("Job %q removed.", j.Spec.Name), "removed_job": format(j)})
		}
	case "run":
		return t.run(ctx, j)
	}
	if err != nil {
		return "", err
	}
	return result(map[string]any{"success": true, "job": format(j)})
}

func (t *Tool) run(ctx context.Context, j *cron.Job) (string, error) {
	t.mu.Lock()
	r := t.runner
	t.mu.Unlock()
	if r == nil {
		return "", errors.New("jobs cannot be run from here: use `hermes cron run " + j.ID + "`")
	}
	type res struct {
		run *cron.Run
		err error
	}
	done := make(chan res, 1)
	// The run outlives this call if it takes long: its answer is
	// delivered to the job's targets either way.
	go func() {
		run, err := r.RunNow(context.WithoutCancel(ctx), j.ID)
		done <- res{run, err}
	}()
	wait := t.RunWait
	if wait <= 0 {
		wait = time.Minute
	}
	select {
	case x := <-done:
		if x.err != nil {
			return "", x.err
		}
		out := map[string]any{"success": x.run.Status == schema.RunOK || x.run.Status == schema.RunSilent, "run_id": x.run.ID, "status": x.run.Status}
		if x.run.Error != "" {
			out["error"] = x.run.Error
		}
		if d := x.run.Deliveries(); d != "" {
			out["delivery"] = d
		}
		return result(out)
	case <-time.After(wait):
		return result(map[string]any{"success": true, "message": fmt.Sprintf("The run of %q started and is still going; its answer goes to %s when it ends.", j.Spec.Name, j.Spec.Deliver)})
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// format is a job as the model reads it.
func format(j *cron.Job) map[string]any {
	m := map[string]any{"job_id": j.ID, "name": j.Spec.Name, "schedule": j.Spec.Schedule, "deliver": j.Spec.Deliver, "state": j.State(),
		"catch_up": j.Spec.CatchUp, "on_crash": j.Spec.OnCrash}
	if j.Spec.Timezone != "" {
		m["timezone"] = j.Spec.Timezone
	}
	if p := j.Spec.Prompt; p != "" {
		if r := []rune(p); len(r) > 100 {
			p = string(r[:100]) + "…"
		}
		m["prompt_preview"] = p
	}
	if j.Spec.Script != "" {
		m["script"] = j.Spec.Script
	}
	if j.Spec.NoAgent {
		m["no_agent"] = true
	}
	if len(j.Spec.Toolsets) > 0 {
		m["enabled_toolsets"] = j.Spec.Toolsets
	}
	if j.Paused && j.Reason != "" {
		m["paused_reason"] = j.Reason
	}
	if n := j.NextSlot(); !n.IsZero() && j.Active() {
		m["next_run_at"] = n.Format(time.RFC3339)
	}
	if l := j.Last; l != nil {
		m["last_run_at"] = l.StartedAt.Format(time.RFC3339)
		m["last_status"] = l.Status
		if l.Error != "" {
			m["last_error"] = l.Error
		}
		if d := l.Deliveries(); d != "" && d != "-" {
			m["last_delivery"] = d
		}
	}
	return m
}

func result(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
