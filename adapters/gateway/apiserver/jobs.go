package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/schema"
)

// /api/jobs is the home's scheduled jobs (actors/cron), as `hermes cron`
// changes them: every change is an event of the job's stream, appended
// through the same cron.Jobs the gateway's scheduler folds.

// Cron is what the job routes drive.
type Cron struct {
	// Jobs are the home's jobs (the scheduler's own, so that it sees a
	// change at once).
	Jobs *cron.Jobs
	// Rules check a job's spec as the cronjob tool and `hermes cron add`
	// do.
	Rules cron.Rules
	// Timezone is the zone of a cron expression given without one
	// (cron.timezone).
	Timezone string
	// RunNow runs a job now, outside its schedule, and returns how the
	// run ended (the scheduler's RunNow); nil refuses POST …/run.
	RunNow func(ctx context.Context, id string) (*cron.Run, error)
}

// jobIDPattern is the shape of a job id (upstream's, and ours: 12 hex
// digits).
var jobIDPattern = regexp.MustCompile(`^[a-f0-9]{12}$`)

// Limits of a job's fields set through the API (upstream's).
const (
	maxJobName   = 200
	maxJobPrompt = 5000
)

// jobView is a job as the job routes show it: upstream's field names.
type jobView struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Prompt          string            `json:"prompt"`
	Script          string            `json:"script,omitempty"`
	NoAgent         bool              `json:"no_agent"`
	Model           *string           `json:"model"`
	Schedule        map[string]any    `json:"schedule"`
	ScheduleDisplay string            `json:"schedule_display"`
	Timezone        string            `json:"timezone,omitempty"`
	Enabled         bool              `json:"enabled"`
	State           string            `json:"state"`
	PausedReason    *string           `json:"paused_reason"`
	CreatedAt       time.Time         `json:"created_at"`
	CreatedBy       string            `json:"created_by"`
	NextRunAt       *time.Time        `json:"next_run_at"`
	LastRunAt       *time.Time        `json:"last_run_at"`
	LastStatus      *string           `json:"last_status"`
	LastError       *string           `json:"last_error"`
	Deliver         string            `json:"deliver"`
	Origin          *schema.JobOrigin `json:"origin"`
	EnabledToolsets []string          `json:"enabled_toolsets"`
	Runs            int               `json:"runs"`
}

func jobViewOf(j *cron.Job) jobView {
	v := jobView{ID: j.ID, Name: j.Spec.Name, Prompt: j.Spec.Prompt, Script: j.Spec.Script, NoAgent: j.Spec.NoAgent, Model: ptr(j.Spec.Model),
		ScheduleDisplay: j.Spec.Schedule, Timezone: j.Spec.Timezone, Enabled: j.Active(), State: j.State(), CreatedAt: j.CreatedAt,
		CreatedBy: j.CreatedBy, Deliver: j.Spec.Deliver, Origin: j.Spec.Origin, EnabledToolsets: j.Spec.Toolsets, Runs: j.Runs}
	if v.EnabledToolsets == nil {
		v.EnabledToolsets = []string{}
	}
	kind := "cron"
	if sch, err := j.Schedule(); err == nil {
		kind = sch.Kind()
	}
	v.Schedule = map[string]any{"kind": kind, "expr": j.Spec.Schedule, "display": j.Spec.Schedule}
	// Upstream's words for our states.
	switch v.State {
	case "active":
		v.State = "scheduled"
	case "done":
		v.State = "completed"
	case "broken":
		v.State = "error"
	case "paused":
		v.PausedReason = ptr(j.Reason)
	}
	if n := j.NextSlot(); !n.IsZero() && j.Active() {
		v.NextRunAt = &n
	}
	if j.Last != nil {
		at := j.Last.StartedAt
		v.LastRunAt, v.LastStatus, v.LastError = &at, ptr(j.Last.Result()), ptr(j.Last.Error)
	}
	return v
}

func (s *Server) jobs(w http.ResponseWriter) *Cron {
	if s.opts.Cron == nil || s.opts.Cron.Jobs == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "scheduled jobs are not available on this server")
		return nil
	}
	return s.opts.Cron
}

// jobsRoot serves /api/jobs: GET lists, POST creates.
func (s *Server) jobsRoot(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.listJobs(w, r)
	case http.MethodPost:
		s.createJob(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET or POST")
	}
}

// jobByID serves /api/jobs/{id}: GET, PATCH, DELETE.
func (s *Server) jobByID(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.getJob(w, r)
	case http.MethodPatch:
		s.updateJob(w, r)
	case http.MethodDelete:
		s.deleteJob(w, r)
	default:
		w.Header().Set("Allow", "GET, PATCH, DELETE")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET, PATCH or DELETE")
	}
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	all, err := c.Jobs.Load(r.Context())
	if err != nil {
		s.readFailed(w, "list jobs", err)
		return
	}
	// As upstream's: paused jobs are listed with include_disabled=true;
	// removed ones (kept for their history) with include_removed=true.
	q := r.URL.Query()
	withPaused := truthy(q.Get("include_disabled"))
	withRemoved := truthy(q.Get("include_removed"))
	out := []jobView{}
	for _, j := range all {
		if j.Removed && !withRemoved || j.Paused && !withPaused {
			continue
		}
		out = append(out, jobViewOf(j))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func truthy(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "1" || v == "true" || v == "yes"
}

// jobRequest is the body of POST /api/jobs and PATCH /api/jobs/{id}.
type jobRequest struct {
	Name     *string   `json:"name"`
	Schedule *string   `json:"schedule"`
	Timezone *string   `json:"timezone"`
	Prompt   *string   `json:"prompt"`
	Deliver  *string   `json:"deliver"`
	Model    *string   `json:"model"`
	Toolsets *[]string `json:"enabled_toolsets"`
	Enabled  *bool     `json:"enabled"`
}

// jobFields are the fields a job request may carry; others are refused
// by name (skills, repeat, script…: see the README).
var jobFields = map[string]bool{"name": true, "schedule": true, "timezone": true, "prompt": true, "deliver": true, "model": true, "enabled_toolsets": true, "enabled": true}

// decodeJob reads a job request, refusing fields it does not take.
func (s *Server) decodeJob(w http.ResponseWriter, r *http.Request) (jobRequest, bool) {
	var req jobRequest
	var raw map[string]json.RawMessage
	if !s.decode(w, r, &raw) {
		return req, false
	}
	if raw == nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_json", "the request body must be a JSON object")
		return req, false
	}
	for k := range raw {
		if !jobFields[k] {
			fail(w, http.StatusBadRequest, invalidRequest, "unsupported_job_field", "unsupported job field "+k+": use name, schedule, timezone, prompt, deliver, model, enabled_toolsets, enabled")
			return req, false
		}
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &req); err != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", "a job field has the wrong type: "+err.Error())
		return req, false
	}
	switch {
	case req.Name != nil && len(*req.Name) > maxJobName:
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", "name is over 200 characters")
		return req, false
	case req.Prompt != nil && len(*req.Prompt) > maxJobPrompt:
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", "prompt is over 5000 characters")
		return req, false
	}
	return req, true
}

// apply sets the fields req carries into spec.
func (req jobRequest) apply(spec *schema.JobSpec) {
	for _, f := range []struct {
		from *string
		to   *string
	}{{req.Name, &spec.Name}, {req.Schedule, &spec.Schedule}, {req.Timezone, &spec.Timezone}, {req.Prompt, &spec.Prompt},
		{req.Deliver, &spec.Deliver}, {req.Model, &spec.Model}} {
		if f.from != nil {
			*f.to = strings.TrimSpace(*f.from)
		}
	}
	if req.Prompt != nil {
		spec.Prompt = *req.Prompt
	}
	if req.Toolsets != nil {
		spec.Toolsets = *req.Toolsets
	}
}

// jobRefused answers an error of the job rules or of a change: a bad
// spec is the client's (400), a missing job 404.
func (s *Server) jobRefused(w http.ResponseWriter, what string, err error) {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "no job"):
		fail(w, http.StatusNotFound, notFoundError, "job_not_found", msg)
	case errors.Is(err, cron.ErrBusy):
		fail(w, http.StatusConflict, invalidRequest, "job_busy", msg)
	case strings.Contains(msg, "read job") || strings.Contains(msg, "append to"):
		s.readFailed(w, what, err)
	default:
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", msg)
	}
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	req, ok := s.decodeJob(w, r)
	if !ok {
		return
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", "name is required")
		return
	}
	if req.Schedule == nil || strings.TrimSpace(*req.Schedule) == "" {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", `schedule is required: "0 9 * * 1-5", "every 30m", "in 2h" or a time`)
		return
	}
	var spec schema.JobSpec
	req.apply(&spec)
	if spec.Deliver == "" {
		spec.Deliver = "local"
	}
	if spec.Timezone == "" && !strings.HasPrefix(spec.Schedule, "CRON_TZ=") && !strings.HasPrefix(spec.Schedule, "TZ=") {
		spec.Timezone = c.Timezone
	}
	spec, err := cron.Normalize(spec, c.Jobs.Now(), c.Rules)
	if err != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job", err.Error())
		return
	}
	enabled := req.Enabled == nil || *req.Enabled
	j, err := c.Jobs.Create(r.Context(), spec, enabled, "api")
	if err != nil {
		s.readFailed(w, "create a job", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job": jobViewOf(j)})
}

// job resolves the {id} of the path; it answers the client itself
// otherwise.
func (s *Server) job(w http.ResponseWriter, r *http.Request, c *Cron) (*cron.Job, bool) {
	id := r.PathValue("id")
	if !jobIDPattern.MatchString(id) {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_job_id", "job id "+strconv.Quote(id)+": 12 hexadecimal digits (GET /api/jobs lists them)")
		return nil, false
	}
	j, err := c.Jobs.Get(r.Context(), id)
	if err != nil {
		s.jobRefused(w, "job "+id, err)
		return nil, false
	}
	if j.Removed {
		fail(w, http.StatusNotFound, notFoundError, "job_not_found", "job "+id+" was removed")
		return nil, false
	}
	return j, true
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	if j, ok := s.job(w, r, c); ok {
		writeJSON(w, http.StatusOK, map[string]any{"job": jobViewOf(j)})
	}
}

func (s *Server) updateJob(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	req, ok := s.decodeJob(w, r)
	if !ok {
		return
	}
	j, ok := s.job(w, r, c)
	if !ok {
		return
	}
	changes := req
	changes.Enabled = nil
	if changes != (jobRequest{}) {
		var err error
		j, err = c.Jobs.Update(r.Context(), j.ID, c.Rules, func(spec *schema.JobSpec) error {
			req.apply(spec)
			return nil
		})
		if err != nil && !errors.Is(err, cron.ErrNothing) {
			s.jobRefused(w, "update job", err)
			return
		}
	}
	if req.Enabled != nil {
		var err error
		if *req.Enabled {
			j, err = c.Jobs.Resume(r.Context(), j.ID)
		} else {
			j, err = c.Jobs.Pause(r.Context(), j.ID, "paused through the API")
		}
		if err != nil {
			s.jobRefused(w, "update job", err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"job": jobViewOf(j)})
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	j, ok := s.job(w, r, c)
	if !ok {
		return
	}
	if _, err := c.Jobs.Remove(r.Context(), j.ID, "removed through the API"); err != nil {
		s.jobRefused(w, "remove job", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// jobAction serves POST /api/jobs/{id}/{action}: pause, resume, run.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) {
	c := s.jobs(w)
	if c == nil {
		return
	}
	j, ok := s.job(w, r, c)
	if !ok {
		return
	}
	var err error
	switch r.PathValue("action") {
	case "pause":
		j, err = c.Jobs.Pause(r.Context(), j.ID, "paused through the API")
	case "resume":
		j, err = c.Jobs.Resume(r.Context(), j.ID)
	case "run":
		if c.RunNow == nil {
			fail(w, http.StatusNotImplemented, serverError, "not_available", "running a job now is not available on this server")
			return
		}
		// The run goes on after the answer, as upstream's trigger does:
		// `hermes cron history` and GET /api/jobs/{id} show how it ended.
		id := j.ID
		go func() {
			if _, err := c.RunNow(context.WithoutCancel(r.Context()), id); err != nil {
				s.log.Warn().Err(err).Str("job", id).Msg("a job run through the API failed")
			}
		}()
		writeJSON(w, http.StatusOK, map[string]any{"job": jobViewOf(j), "status": "started"})
		return
	default:
		fail(w, http.StatusNotFound, notFoundError, "unknown_url", "no route POST "+r.URL.Path+": use pause, resume or run")
		return
	}
	if err != nil {
		s.jobRefused(w, r.PathValue("action")+" job", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job": jobViewOf(j)})
}
