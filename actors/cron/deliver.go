package cron

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// deliverPending delivers run's output to each of its targets still
// without an outcome whose attempt is due, and records each outcome in the
// job's stream. When ctx ends (the scheduler stops) what is not delivered
// stays pending, and is delivered by the next scheduler to start. later
// reports deliveries left pending for later: a retry not due yet, or a
// platform this process cannot reach, left for a process that can (a
// gateway) until HandOver has passed.
func (s *Scheduler) deliverPending(ctx context.Context, j *Job, run *Run) (later bool) {
	now := s.cfg.Clock.Now()
	for _, t := range run.Pending() {
		if ctx.Err() != nil {
			return true
		}
		attempt, due := run.NextAttempt(t.String())
		if due.After(now) {
			later = true
			continue
		}
		if s.deliverTo(ctx, j, run, t, attempt) {
			later = true
		}
	}
	return later
}

// text is what a target receives of a run.
func (s *Scheduler) text(j *Job, run *Run) string {
	if !s.cfg.Wrap || run.Status != schema.RunOK {
		return run.Output
	}
	return fmt.Sprintf("⏰ %s\n\n%s", j.Spec.Name, run.Output)
}

func (s *Scheduler) deliverTo(ctx context.Context, j *Job, run *Run, t Target, attempt int) (later bool) {
	log := s.log.With().Str("job", j.ID).Str("run", run.ID).Str("target", t.String()).Logger()
	wctx := context.WithoutCancel(ctx)
	switch t.Kind {
	case TargetLocal:
		path, err := s.writeOutput(j, run)
		if err != nil {
			s.outcome(wctx, j.ID, schema.JobDeliveryFailed{RunID: run.ID, Target: t.String(), Error: err.Error()}, false)
			log.Error().Err(err).Msg("write cron output")
			return false
		}
		s.outcome(wctx, j.ID, schema.JobDelivered{RunID: run.ID, Target: t.String(), Path: path}, false)
	case TargetPlatform:
		return s.deliverToPlatform(ctx, j, run, t, attempt)
	default:
		s.outcome(wctx, j.ID, schema.JobDeliveryFailed{RunID: run.ID, Target: t.String(), Error: t.Err}, false)
	}
	return false
}

// reach says whether this process can deliver to platform, and why not.
func (s *Scheduler) reach(platform string) (bool, string) {
	if s.cfg.Bus == nil {
		return false, s.cfg.NoBus
	}
	if s.cfg.Platforms != nil {
		if up := s.cfg.Platforms(); !slices.Contains(up, platform) {
			return false, fmt.Sprintf("platform %s is not running in this gateway (running: %s)", platform, strings.Join(up, ", "))
		}
	}
	return true, ""
}

func (s *Scheduler) deliverToPlatform(ctx context.Context, j *Job, run *Run, t Target, attempt int) (later bool) {
	log := s.log.With().Str("job", j.ID).Str("run", run.ID).Str("target", t.String()).Int("attempt", attempt).Logger()
	// fail records this attempt failed; a retryable failure leaves the
	// delivery pending for its next attempt.
	fail := func(msg string, retryable bool) bool {
		s.outcome(context.WithoutCancel(ctx), j.ID, schema.JobDeliveryFailed{RunID: run.ID, Target: t.String(), Error: msg, Attempt: attempt}, retryable)
		log.Warn().Str("error", msg).Bool("retryable", retryable).Msg("cron delivery failed")
		return retryable
	}
	if ok, why := s.reach(t.Platform); !ok {
		// Another process (a gateway running the platform) delivers it;
		// when nobody has HandOver after this process first left it,
		// it failed.
		if s.handOver(run.ID+"|"+t.String()) < s.cfg.HandOver {
			log.Debug().Str("reason", why).Msg("delivery left for a process that runs the platform")
			return true
		}
		fail(fmt.Sprintf("%s; no process running %s delivered it within %s", why, t.Platform, s.cfg.HandOver), false)
		return false
	}
	chat, thread := t.Chat, t.Thread
	if t.Home {
		// The platform's home channel now (the last /sethome there).
		var ok bool
		var err error
		if s.cfg.Home != nil {
			chat, thread, ok, err = s.cfg.Home(ctx, t.Platform)
		}
		switch {
		case err != nil:
			return fail("read the home channels: "+err.Error(), true)
		case !ok:
			return fail(fmt.Sprintf("%s has no home channel: send /sethome in the %s chat that should get these, or deliver to %s:CHAT", t.Platform, t.Platform, t.Platform), false)
		}
	}
	changed, done := s.waitFor(j.ID)
	defer done()
	out := schema.Outbound{Kind: schema.OutboundReply, Key: KeyPrefix + j.ID, Platform: t.Platform, Chat: chat, Thread: thread,
		ReplyID: run.ID + "|" + t.String(), SessionID: run.SessionID, Text: s.text(j, run)}
	if run.Status == schema.RunFailed {
		out.Error = run.Error
	}
	if err := s.cfg.Bus.Publish(ctx, out); err != nil {
		return fail("publish to the gateway bus: "+err.Error(), true)
	}
	expired := make(chan struct{})
	timer := s.cfg.Clock.AfterFunc(s.cfg.AckTimeout, func() { close(expired) })
	defer timer.Stop()
	for {
		j := s.jobs.Peek(j.ID)
		if j == nil || !pending(j, run.ID, t.String()) {
			return false
		}
		if r := j.Open[run.ID]; r.Attempts[t.String()] >= attempt {
			return true // this attempt failed; the next is due later
		}
		select {
		case <-changed:
		case <-expired:
			fail(fmt.Sprintf("no delivery acknowledgement from the %s adapter within %s (it may have arrived: not sent again)", t.Platform, s.cfg.AckTimeout), false)
			return false
		case <-ctx.Done():
			return true // left pending: delivered again after a restart
		}
	}
}

// handOver is how long ago this process first left delivery key to
// another (zero the first time).
func (s *Scheduler) handOver(key string) time.Duration {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	first, ok := s.leftAt[key]
	if !ok {
		if len(s.leftAt) >= 10000 {
			clear(s.leftAt) // bounded: a forgotten wait starts again
		}
		s.leftAt[key] = now
		return 0
	}
	return now.Sub(first)
}

// pending reports whether run rid of j still waits for target's outcome.
func pending(j *Job, rid, target string) bool {
	r, ok := j.Open[rid]
	if !ok {
		return false
	}
	_, done := r.Outcomes[target]
	return !done
}

// outcome records a delivery outcome unless one is recorded already. A
// failure that is retryable is recorded as an attempt that another
// follows (Retry), while attempts remain (DeliveryAttempts).
func (s *Scheduler) outcome(ctx context.Context, id string, p schema.Payload, retryable bool) error {
	var rid, target string
	switch e := p.(type) {
	case schema.JobDelivered:
		rid, target = e.RunID, e.Target
	case schema.JobDeliveryFailed:
		rid, target = e.RunID, e.Target
	}
	_, err := s.jobs.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if !pending(j, rid, target) {
			return nil, ErrNothing
		}
		if f, ok := p.(schema.JobDeliveryFailed); ok {
			run := j.Open[rid]
			n := run.Attempts[target] + 1
			if f.Attempt != 0 && f.Attempt < n {
				return nil, ErrNothing // that attempt's outcome is in already
			}
			f.Attempt = n
			f.Retry = retryable && n < s.cfg.DeliveryAttempts
			if retryable && !f.Retry {
				f.Error = fmt.Sprintf("%s (attempt %d of %d: not tried again)", f.Error, n, s.cfg.DeliveryAttempts)
			}
			p = f
		}
		return []schema.Payload{p}, nil
	})
	if errors.Is(err, ErrNothing) {
		return nil
	}
	if err != nil {
		s.log.Error().Err(err).Str("job", id).Str("run", rid).Msg("record a delivery outcome")
		return err
	}
	s.signal(id)
	return nil
}

// Ack records the outcome of a delivery a platform adapter reports
// (schema.Inbound of kind delivered or failed whose Key starts with
// KeyPrefix); the gateway router calls it. It returns once the outcome is
// recorded, so that the bus message is acknowledged only then.
func (s *Scheduler) Ack(in schema.Inbound) error {
	id, ok := strings.CutPrefix(in.Key, KeyPrefix)
	if !ok {
		return nil
	}
	rid, target, ok := strings.Cut(in.ReplyID, "|")
	if !ok || id == "" {
		s.log.Warn().Str("key", in.Key).Str("reply", in.ReplyID).Msg("a cron delivery outcome names no run: ignored")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var p schema.Payload = schema.JobDelivered{RunID: rid, Target: target, PlatformMessageIDs: in.PlatformMessageIDs}
	if in.Kind == schema.InboundFailed {
		p = schema.JobDeliveryFailed{RunID: rid, Target: target, Error: in.Error}
	}
	return s.outcome(ctx, id, p, !in.Permanent)
}

// writeOutput writes run's output to OutputDir/<job>/<run>.md (through a
// temporary file and a rename, so that a reader never sees half of it)
// and keeps the job's newest Retention files.
func (s *Scheduler) writeOutput(j *Job, run *Run) (string, error) {
	if s.cfg.OutputDir == "" {
		return "", errors.New("no output directory is configured")
	}
	dir := filepath.Join(s.cfg.OutputDir, j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", j.Spec.Name)
	fmt.Fprintf(&b, "- job: %s\n- run: %s (%s, attempt %d)\n- scheduled for: %s\n- status: %s\n",
		j.ID, run.ID, run.Trigger, run.Attempt, run.ScheduledFor.Format(time.RFC3339), run.Status)
	if run.SessionID != "" {
		fmt.Fprintf(&b, "- session: %s\n", run.SessionID)
	}
	fmt.Fprintf(&b, "\n%s\n", run.Output)
	path := filepath.Join(dir, run.ID+".md")
	if err := writeAtomic(path, []byte(b.String())); err != nil {
		return "", err
	}
	if s.cfg.Retention > 0 {
		prune(dir, s.cfg.Retention)
	}
	return path, nil
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// prune keeps the keep newest .md files of dir.
func prune(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var fs []file
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".md") {
			if info, err := e.Info(); err == nil {
				fs = append(fs, file{e.Name(), info.ModTime()})
			}
		}
	}
	if len(fs) <= keep {
		return
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].mod.After(fs[j].mod) })
	for _, f := range fs[keep:] {
		os.Remove(filepath.Join(dir, f.name))
	}
}
