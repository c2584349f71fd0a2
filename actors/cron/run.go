package cron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// SilentMarker is Hermes' convention for "nothing to report": an answer
// that is, starts with, or ends on a line of [SILENT] delivers nothing.
const SilentMarker = "[SILENT]"

// IsSilent reports whether answer asks for nothing to be delivered: it is
// empty, starts with [SILENT], or its last line is [SILENT]. A [SILENT]
// in the middle of a real report does not silence it.
func IsSilent(answer string) bool {
	t := strings.TrimSpace(answer)
	if t == "" || strings.HasPrefix(strings.ToUpper(t), SilentMarker) {
		return true
	}
	lines := strings.Split(t, "\n")
	return strings.EqualFold(strings.TrimSpace(lines[len(lines)-1]), SilentMarker)
}

type outcome struct {
	status, output, err string
	cost                float64
}

// execute runs a claimed run to its end: the script and/or the agent
// under the job's timeout, JobRunFinished, then the deliveries. It
// returns the run as the job's fold has it afterwards.
func (s *Scheduler) execute(ctx context.Context, j *Job, st *schema.JobRunStarted) *Run {
	log := s.log.With().Str("job", j.ID).Str("run", st.RunID).Str("trigger", st.Trigger).Logger()
	log.Info().Time("slot", st.ScheduledFor).Int("attempt", st.Attempt).Msg("run started")
	began := time.Now()
	o := s.perform(ctx, j, st)
	fin := schema.JobRunFinished{RunID: st.RunID, Status: o.status, Error: o.err, CostUSD: o.cost,
		DurationMS: time.Since(began).Milliseconds(), Output: clipOutput(o.output)}
	// The outcome is written even while the scheduler stops.
	wctx := context.WithoutCancel(ctx)
	j2, err := s.jobs.Append(wctx, j.ID, func(j *Job) ([]schema.Payload, error) {
		if r, ok := j.Open[st.RunID]; !ok || r.Finished {
			return nil, ErrNothing
		}
		return []schema.Payload{fin}, nil
	})
	if err != nil && !errors.Is(err, ErrNothing) {
		log.Error().Err(err).Msg("record the end of a run")
		return &Run{ID: st.RunID, Status: o.status, Error: o.err, Finished: true}
	}
	ev := log.Info()
	if o.status == schema.RunFailed || o.status == schema.RunInterrupted {
		ev = log.Warn().Str("error", o.err)
	}
	ev.Str("status", o.status).Float64("cost", o.cost).Msg("run finished")
	if r, ok := j2.Open[st.RunID]; ok {
		s.deliverPending(ctx, j2, r)
	}
	return s.runOf(j.ID, st.RunID)
}

// runOf is run rid of job id as this process last saw it.
func (s *Scheduler) runOf(id, rid string) *Run {
	j := s.jobs.Peek(id)
	if j == nil {
		return nil
	}
	if r, ok := j.Open[rid]; ok {
		return r
	}
	if j.Last != nil && j.Last.ID == rid {
		return j.Last
	}
	return nil
}

func clipOutput(s string) string {
	if len(s) <= MaxOutputBytes {
		return s
	}
	cut := MaxOutputBytes
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "\n[… output cut at 64 KB]"
}

type timeoutError struct{ d time.Duration }

func (e timeoutError) Error() string { return fmt.Sprintf("the run timed out after %s", e.d) }

// perform runs the job's script and/or prompt and says how it went.
func (s *Scheduler) perform(ctx context.Context, j *Job, st *schema.JobRunStarted) outcome {
	timeout := s.cfg.Timeout
	if j.Spec.TimeoutSeconds > 0 {
		timeout = time.Duration(j.Spec.TimeoutSeconds) * time.Second
	}
	rctx, cancel := context.WithTimeoutCause(ctx, timeout, timeoutError{timeout})
	defer cancel()
	ended := func(err error) (outcome, bool) {
		switch {
		case ctx.Err() != nil:
			return outcome{status: schema.RunInterrupted, err: "the scheduler stopped during the run"}, true
		case rctx.Err() != nil:
			return s.failed(j, context.Cause(rctx).Error()), true
		}
		return outcome{}, false
	}
	var scriptOut string
	var scriptErr error
	if j.Spec.Script != "" {
		if s.cfg.Scripts == nil {
			return s.failed(j, "scripts cannot run in this process")
		}
		scriptOut, scriptErr = s.cfg.Scripts.Run(rctx, j.Spec.Script)
		if o, done := ended(scriptErr); done {
			return o
		}
		if j.Spec.NoAgent {
			switch {
			case scriptErr != nil:
				o := s.failed(j, "the script failed: "+scriptErr.Error())
				if strings.TrimSpace(scriptOut) != "" {
					o.output += "\n\n" + strings.TrimSpace(scriptOut)
				}
				return o
			case strings.TrimSpace(scriptOut) == "":
				return outcome{status: schema.RunSilent}
			}
			return outcome{status: schema.RunOK, output: strings.TrimRight(scriptOut, "\n")}
		}
		if scriptErr == nil && strings.TrimSpace(scriptOut) == "" {
			// Nothing collected: nothing to hand the model.
			return outcome{status: schema.RunSilent}
		}
	}
	if s.cfg.Agent == nil {
		return s.failed(j, "no model is configured in this process")
	}
	answer, cost, err := s.cfg.Agent.Run(rctx, st.SessionID, j, s.prompt(j, scriptOut, scriptErr))
	if o, done := ended(err); done {
		o.cost = cost
		return o
	}
	if err != nil {
		o := s.failed(j, err.Error())
		o.cost = cost
		return o
	}
	if IsSilent(answer) {
		return outcome{status: schema.RunSilent, cost: cost}
	}
	return outcome{status: schema.RunOK, output: strings.TrimSpace(answer), cost: cost}
}

// failed is a failed run whose output tells the job's targets so.
func (s *Scheduler) failed(j *Job, msg string) outcome {
	return outcome{status: schema.RunFailed, err: msg, output: fmt.Sprintf("Cron job %q failed: %s", j.Spec.Name, msg)}
}

// prompt is what the run's session is asked: how it runs, what the
// script collected, then the job's prompt.
func (s *Scheduler) prompt(j *Job, scriptOut string, scriptErr error) string {
	var b strings.Builder
	targets := j.Spec.Deliver
	if ts, err := ParseTargets(j.Spec.Deliver, j.Spec.Origin); err == nil && len(ts) == 0 {
		targets = "nowhere (it is kept in the job's history)"
	}
	fmt.Fprintf(&b, "[This is a scheduled run of the cron job %q. Nobody is watching: do not ask questions, do the work and answer. "+
		"Your final answer is delivered automatically to %s; do not try to send it yourself. "+
		"If there is nothing worth reporting, answer exactly %s and nothing will be sent.]\n\n", j.Spec.Name, targets, SilentMarker)
	if j.Spec.Script != "" {
		if scriptErr != nil {
			fmt.Fprintf(&b, "## The data-collection command failed\n\nThe command `%s` failed (%v). Tell the user.\n\n", j.Spec.Script, scriptErr)
		} else {
			fmt.Fprintf(&b, "## Data collected for this run\n\nThe command `%s` printed:\n\n", j.Spec.Script)
		}
		if out := strings.TrimSpace(scriptOut); out != "" {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", out)
		}
	}
	b.WriteString(j.Spec.Prompt)
	return b.String()
}
