package cron_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/cron/crontest"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// stubAgent answers every run at once (or as reply says) and records the
// prompts it got.
type stubAgent struct {
	mu      sync.Mutex
	prompts []string
	reply   func(ctx context.Context, job *cron.Job, prompt string) (string, error)
}

func (a *stubAgent) Run(ctx context.Context, _ string, job *cron.Job, prompt string) (string, float64, error) {
	a.mu.Lock()
	a.prompts = append(a.prompts, prompt)
	reply := a.reply
	a.mu.Unlock()
	if reply == nil {
		return "done: " + job.Spec.Name, 0.001, nil
	}
	answer, err := reply(ctx, job, prompt)
	return answer, 0.001, err
}

func (a *stubAgent) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.prompts...)
}

type rig struct {
	dir   string
	store *embedded.Store
	clock *crontest.Clock
	sys   *actor.ActorSystem
	sched *cron.Scheduler
	jobs  *cron.Jobs
	stop  func()
}

// startScheduler runs a scheduler on the store in dir (a handle of its
// own, as a process would have) with clock; agent builds its agent.
func startScheduler(t *testing.T, dir string, clock *crontest.Clock, cfg cron.Config, agentOf func(*embedded.Store, *actor.ActorSystem) cron.Agent) *rig {
	t.Helper()
	store := openStore(t, dir)
	sys := actors.NewSystem(zerolog.Nop())
	cfg.Clock = clock
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join(dir, "output")
	}
	if agentOf != nil {
		cfg.Agent = agentOf(store, sys)
	}
	jobs := cron.NewJobs(store, clock.Now)
	s := cron.New(store, jobs, sys, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatal(err)
	}
	r := &rig{dir: dir, store: store, clock: clock, sys: sys, sched: s, jobs: jobs}
	r.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
		sys.Shutdown()
	})
	t.Cleanup(r.stop)
	return r
}

func stub(a *stubAgent) func(*embedded.Store, *actor.ActorSystem) cron.Agent {
	return func(*embedded.Store, *actor.ActorSystem) cron.Agent { return a }
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

// history reads job id's history from store.
func history(t *testing.T, store events.Store, id string) []cron.Entry {
	t.Helper()
	rs, err := store.ReadStream(context.Background(), cron.JobStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cron.History(rs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func runs(t *testing.T, store events.Store, id string) []*cron.Run {
	var out []*cron.Run
	for _, e := range history(t, store, id) {
		if e.Kind == "run" {
			out = append(out, e.Run)
		}
	}
	return out
}

// settled reports whether job id has n runs, all closed.
// handedOver waits until job id's one run is finished with its platform
// delivery left pending for another process ("ok, delivering"), then
// moves the clock on a minute at a time until the hand-over has passed
// and the delivery is recorded failed.
func handedOver(t *testing.T, clock *crontest.Clock, store events.Store, id string) {
	t.Helper()
	waitFor(t, "job "+id+" left pending", func() bool {
		rs := runs(t, store, id)
		return len(rs) == 1 && rs[0].Result() == "ok, delivering"
	})
	end := clock.Now().Add(cron.DefaultHandOver + 5*time.Minute)
	for !settled(t, store, id, 1) {
		if clock.Now().After(end) {
			t.Fatalf("job %s: the delivery is still pending %s after the run", id, cron.DefaultHandOver+5*time.Minute)
		}
		clock.Advance(time.Minute)
		time.Sleep(20 * time.Millisecond)
	}
	if r := runs(t, store, id)[0]; r.Result() != "ok, delivery failed" {
		t.Fatalf("job %s after the hand-over: %s", id, r.Result())
	}
}

func settled(t *testing.T, store events.Store, id string, n int) bool {
	rs := runs(t, store, id)
	if len(rs) != n {
		return false
	}
	for _, r := range rs {
		if !r.Finished || len(r.Pending()) > 0 {
			return false
		}
	}
	return true
}

func sessionAgent(srv *llmtest.Server) func(*embedded.Store, *actor.ActorSystem) cron.Agent {
	return func(store *embedded.Store, sys *actor.ActorSystem) cron.Agent {
		deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
			Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 4, 30*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10}
		return &cron.SessionAgent{Sys: sys, Deps: deps, Create: func(ctx context.Context, id string, job *cron.Job) error {
			return session.Create(ctx, store, id, session.Start{Source: "cron", Model: "gpt-4o-mini", System: "You are Hermes."})
		}}
	}
}

// TestJobFiresOnTimeIntoASessionAndDeliversToAFile: a weekday-morning job
// in Berlin fires at 09:00 local, not a second before, in a fresh cron
// session through the session actors and a model server, and its answer
// lands in a file; the timer then waits for the next weekday.
func TestJobFiresOnTimeIntoASessionAndDeliversToAFile(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The nightly build is green.", Prompt: 1000, Completion: 10})
	defer srv.Close()
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	r := startScheduler(t, dir, clock, cron.Config{}, sessionAgent(srv))
	j := mustCreate(t, r.jobs, schema.JobSpec{Name: "build check", Schedule: "0 9 * * 1-5", Timezone: "Europe/Berlin", Prompt: "Check the nightly build."})
	slot := time.Date(2026, 6, 1, 7, 0, 0, 0, time.UTC)
	waitFor(t, "the timer to be set for 09:00 Berlin", func() bool { return clock.NextAt().Equal(slot) })
	clock.Set(slot.Add(-time.Second))
	time.Sleep(200 * time.Millisecond)
	if n := len(runs(t, r.store, j.ID)); n != 0 {
		t.Fatalf("%d runs a second before the slot", n)
	}
	clock.Set(slot)
	waitFor(t, "the run to be delivered", func() bool { return settled(t, r.store, j.ID, 1) })
	run := runs(t, r.store, j.ID)[0]
	if run.Status != schema.RunOK || !run.ScheduledFor.Equal(slot) || run.Trigger != schema.TriggerSchedule || run.SessionID == "" {
		t.Fatalf("run %+v", run)
	}
	out := run.Outcomes["local"]
	data, err := os.ReadFile(out.Path)
	if err != nil || !strings.Contains(string(data), "The nightly build is green.") || !strings.Contains(string(data), run.SessionID) {
		t.Fatalf("output file %s: %q %v", out.Path, data, err)
	}
	if filepath.Dir(out.Path) != filepath.Join(dir, "output", j.ID) {
		t.Fatalf("output at %s", out.Path)
	}
	// The run is a normal session with source cron, asked the job's prompt.
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream(run.SessionID), events.Forward, 0, 0)
	if len(rs) < 4 || !strings.Contains(string(rs[0].Payload), `"source":"cron"`) {
		t.Fatalf("session %v", rs)
	}
	p, _ := schema.Decode(rs[2].Envelope)
	if u, ok := p.(schema.UserMessageAdded); !ok || !strings.Contains(u.Content, "Check the nightly build.") || !strings.Contains(u.Content, `cron job "build check"`) || !strings.Contains(u.Content, "[SILENT]") {
		t.Fatalf("first user message %+v", p)
	}
	if len(srv.Requests()) != 1 {
		t.Fatalf("%d model calls", len(srv.Requests()))
	}
	tuesday := slot.Add(24 * time.Hour)
	waitFor(t, "the next weekday's timer", func() bool { return clock.NextAt().Equal(tuesday) })
}

// TestSchedulersOnOneStoreNeverDoubleFire: three schedulers (each on its own
// store handle, as three processes on one home) share a clock and twenty
// jobs firing every minute; over fifty minutes each of the 1,000 slots
// runs exactly once.
func TestSchedulersOnOneStoreNeverDoubleFire(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	var rigs []*rig
	var agents []*stubAgent
	for range 3 {
		a := &stubAgent{}
		agents = append(agents, a)
		o := session.ThisProcess()
		rigs = append(rigs, startScheduler(t, dir, clock, cron.Config{Leases: session.NewFileLeases(filepath.Join(dir, "locks"), o), MaxConcurrent: 8}, stub(a)))
	}
	const jobs, minutes = 20, 50
	var ids []string
	for i := range jobs {
		j := mustCreate(t, rigs[i%3].jobs, schema.JobSpec{Schedule: "every 1m", Prompt: "tick", Deliver: "none"})
		ids = append(ids, j.ID)
	}
	reader := cron.NewJobs(openStore(t, dir), nil)
	for k := 1; k <= minutes; k++ {
		slot := t0.Add(time.Duration(k) * time.Minute)
		clock.Set(slot)
		waitFor(t, "every job to run its slot", func() bool {
			all, err := reader.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range all {
				if !j.LastSlot.Equal(slot) || len(j.Open) > 0 {
					return false
				}
			}
			return len(all) == jobs
		})
	}
	total, owners := 0, map[string]int{}
	for _, id := range ids {
		perSlot := map[time.Time]int{}
		for _, run := range runs(t, rigs[0].store, id) {
			perSlot[run.ScheduledFor]++
			owners[run.Owner.Nonce]++
			if run.Status != schema.RunOK {
				t.Fatalf("run %+v", run)
			}
		}
		for s, n := range perSlot {
			if n != 1 {
				t.Fatalf("job %s slot %s ran %d times", id, s, n)
			}
		}
		total += len(perSlot)
	}
	calls := 0
	for _, a := range agents {
		calls += len(a.calls())
	}
	if total != jobs*minutes || calls != jobs*minutes {
		t.Fatalf("%d slots run, %d agent calls, want %d", total, calls, jobs*minutes)
	}
	if len(owners) < 2 {
		t.Fatalf("one scheduler ran everything (%v): no race took place", owners)
	}
	t.Logf("runs per scheduler: %v", owners)
}

// TestCrashedRunsFollowTheirPolicy: runs a dead process left open are
// recorded interrupted when a scheduler starts; on_crash retry runs the
// slot again (once), on_crash fail does not; a run a live process holds
// is left alone until its holder lets go.
func TestCrashedRunsFollowTheirPolicy(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	clock := crontest.NewClock(t0.Add(70 * time.Minute))
	jobs := cron.NewJobs(openStore(t, dir), fixed(t0))
	retry := mustCreate(t, jobs, schema.JobSpec{Name: "retry", Schedule: "every 1h", Prompt: "p"})
	fail := mustCreate(t, jobs, schema.JobSpec{Name: "fail", Schedule: "every 1h", Prompt: "p", OnCrash: "fail"})
	live := mustCreate(t, jobs, schema.JobSpec{Name: "live", Schedule: "every 1h", Prompt: "p"})
	dead := &schema.RunOwner{Host: "old-box", PID: 999999, Nonce: "x"}
	for _, c := range []struct{ id, run string }{{retry.ID, "r-retry"}, {fail.ID, "r-fail"}, {live.ID, "r-live"}} {
		if _, err := jobs.Append(ctx, c.id, func(*cron.Job) ([]schema.Payload, error) {
			return []schema.Payload{schema.JobRunStarted{RunID: c.run, ScheduledFor: t0.Add(time.Hour), Attempt: 1, Trigger: schema.TriggerSchedule, SessionID: "s", Owner: dead}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Another live process still runs "live".
	other := session.NewFileLeases(filepath.Join(dir, "locks"), session.ThisProcess())
	held, err := other.Lease("cron-run-r-live")
	if err != nil {
		t.Fatal(err)
	}
	a := &stubAgent{}
	r := startScheduler(t, dir, clock, cron.Config{Leases: session.NewFileLeases(filepath.Join(dir, "locks"), session.ThisProcess())}, stub(a))
	waitFor(t, "the crashed run to be retried", func() bool { return settled(t, r.store, retry.ID, 2) })
	rs := runs(t, r.store, retry.ID)
	if rs[0].Status != schema.RunInterrupted || !strings.Contains(rs[0].Error, "pid 999999 on old-box") || !strings.Contains(rs[0].Error, "retried once") {
		t.Fatalf("crashed run %+v", rs[0])
	}
	if rs[1].Trigger != schema.TriggerRetry || rs[1].Attempt != 2 || !rs[1].ScheduledFor.Equal(t0.Add(time.Hour)) || rs[1].Status != schema.RunOK {
		t.Fatalf("retry %+v", rs[1])
	}
	waitFor(t, "the on_crash fail run to be closed", func() bool { return settled(t, r.store, fail.ID, 1) })
	if f := runs(t, r.store, fail.ID)[0]; f.Status != schema.RunInterrupted || !strings.Contains(f.Error, "not retried") {
		t.Fatalf("on_crash fail %+v", f)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(runs(t, r.store, fail.ID)); n != 1 {
		t.Fatalf("on_crash fail ran again: %d runs", n)
	}
	if l := runs(t, r.store, live.ID); len(l) != 1 || l[0].Finished {
		t.Fatalf("a run a live process holds was touched: %+v", l)
	}
	// The holder goes; at the next look the run is settled.
	held.Release()
	clock.Advance(cron.DefaultRecheck)
	waitFor(t, "the released run to be settled and retried", func() bool { return settled(t, r.store, live.ID, 2) })
}

// TestCatchUpAfterDowntime: a job missed five hourly slots while no
// scheduler ran; with catch_up once the newest runs late and the others
// are reported missed.
func TestCatchUpAfterDowntime(t *testing.T) {
	dir := t.TempDir()
	jobs := cron.NewJobs(openStore(t, dir), fixed(t0))
	once := mustCreate(t, jobs, schema.JobSpec{Name: "once", Schedule: "every 1h", Prompt: "p"})
	skip := mustCreate(t, jobs, schema.JobSpec{Name: "skip", Schedule: "every 1h", Prompt: "p", CatchUp: "skip"})
	all := mustCreate(t, jobs, schema.JobSpec{Name: "all", Schedule: "every 1h", Prompt: "p", CatchUp: "all"})
	clock := crontest.NewClock(t0.Add(5*time.Hour + 30*time.Minute))
	r := startScheduler(t, dir, clock, cron.Config{}, stub(&stubAgent{}))
	waitFor(t, "catch-up", func() bool {
		return settled(t, r.store, once.ID, 1) && settled(t, r.store, all.ID, 5) && len(history(t, r.store, skip.ID)) == 2
	})
	h := history(t, r.store, once.ID)
	if h[1].Kind != "missed" || !strings.Contains(h[1].Detail, "4 slot(s)") || h[2].Run.Trigger != schema.TriggerCatchUp || !h[2].Run.ScheduledFor.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("once: %+v %+v", h[1], h[2].Run)
	}
	if h := history(t, r.store, skip.ID); h[1].Kind != "missed" || !strings.Contains(h[1].Detail, "5 slot(s)") {
		t.Fatalf("skip: %+v", h)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(runs(t, r.store, skip.ID)); n != 0 {
		t.Fatalf("catch_up skip ran %d times", n)
	}
	for i, run := range runs(t, r.store, all.ID) {
		if !run.ScheduledFor.Equal(t0.Add(time.Duration(i+1) * time.Hour)) {
			t.Fatalf("catch_up all run %d for %s", i, run.ScheduledFor)
		}
	}
	// Back on schedule: the next slot is 06:00 after start.
	waitFor(t, "the next timer", func() bool { return clock.NextAt().Equal(t0.Add(6 * time.Hour)) })
}

// TestPauseResumeRemoveTakeEffectWithoutRestart: another process (the
// CLI) changes a job; the running scheduler follows.
func TestPauseResumeRemoveTakeEffectWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	clock := crontest.NewClock(t0)
	r := startScheduler(t, dir, clock, cron.Config{}, stub(&stubAgent{}))
	cli := cron.NewJobs(openStore(t, dir), clock.Now)
	j := mustCreate(t, cli, schema.JobSpec{Schedule: "every 1h", Prompt: "p"})
	waitFor(t, "the scheduler to see the job", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })

	if _, err := cli.Pause(ctx, j.ID, "holiday"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pause to reach the scheduler", func() bool { return clock.Waiting() == 0 })
	clock.Set(t0.Add(90 * time.Minute))
	time.Sleep(200 * time.Millisecond)
	if n := len(runs(t, r.store, j.ID)); n != 0 {
		t.Fatalf("a paused job ran %d times", n)
	}

	if _, err := cli.Resume(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resume to reach the scheduler", func() bool { return clock.NextAt().Equal(t0.Add(2 * time.Hour)) })
	clock.Set(t0.Add(2 * time.Hour))
	waitFor(t, "the resumed job to run", func() bool { return settled(t, r.store, j.ID, 1) })

	if _, err := cli.Update(ctx, j.ID, cron.Rules{}, func(s *schema.JobSpec) error { s.Schedule = "every 15m"; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new schedule", func() bool { return clock.NextAt().Equal(t0.Add(2*time.Hour + 15*time.Minute)) })

	if _, err := cli.Remove(ctx, j.ID, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removal to reach the scheduler", func() bool { return clock.Waiting() == 0 })
	clock.Set(t0.Add(5 * time.Hour))
	time.Sleep(200 * time.Millisecond)
	if n := len(runs(t, r.store, j.ID)); n != 1 {
		t.Fatalf("a removed job ran: %d runs", n)
	}
}

// TestSilentScriptsTimeoutsAndUndeliverableTargets covers how runs end
// besides ok: a [SILENT] answer delivers nothing; a script-only job
// delivers what it printed (nothing when it printed nothing); a script
// feeds the prompt; a dangerous script nobody may approve fails; a run
// past its timeout fails and says so; a platform target without a
// gateway fails with the reason.
func TestSilentScriptsTimeoutsAndUndeliverableTargets(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	a := &stubAgent{reply: func(ctx context.Context, job *cron.Job, prompt string) (string, error) {
		switch job.Spec.Name {
		case "quiet":
			return "[SILENT]", nil
		case "slow":
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "answer of " + job.Spec.Name, nil
	}}
	r := startScheduler(t, dir, clock, cron.Config{Scripts: terminal.JobShell{Dir: filepath.Join(dir, "scripts")}}, stub(a))
	ctx := context.Background()
	create := func(s schema.JobSpec) string {
		s.Schedule = "every 1h"
		if s.Deliver == "" {
			s.Deliver = "local"
		}
		s.CatchUp, s.OnCrash = "once", "retry"
		j, err := r.jobs.Create(ctx, s, true, "cli")
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	quiet := create(schema.JobSpec{Name: "quiet", Prompt: "anything new?"})
	script := create(schema.JobSpec{Name: "script", Script: "echo hello; echo world", NoAgent: true})
	empty := create(schema.JobSpec{Name: "empty", Script: "true", NoAgent: true})
	fed := create(schema.JobSpec{Name: "fed", Script: "echo 42", Prompt: "What number did the script print?"})
	danger := create(schema.JobSpec{Name: "danger", Script: "rm -r ./nothing-here", NoAgent: true})
	slow := create(schema.JobSpec{Name: "slow", Prompt: "take your time", TimeoutSeconds: 1})
	remote := create(schema.JobSpec{Name: "remote", Prompt: "p", Deliver: "telegram:111111"})
	waitFor(t, "the timers", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	clock.Set(t0.Add(time.Hour))
	for _, id := range []string{quiet, script, empty, fed, danger, slow} {
		waitFor(t, "job "+id, func() bool { return settled(t, r.store, id, 1) })
	}
	handedOver(t, clock, r.store, remote)
	one := func(id string) *cron.Run { return runs(t, r.store, id)[0] }
	if q := one(quiet); q.Status != schema.RunSilent || len(q.Targets) != 0 {
		t.Fatalf("silent run %+v", q)
	}
	if _, err := os.Stat(filepath.Join(dir, "output", quiet)); !os.IsNotExist(err) {
		t.Fatal("a silent run wrote output")
	}
	s := one(script)
	data, _ := os.ReadFile(s.Outcomes["local"].Path)
	if s.Status != schema.RunOK || !strings.Contains(string(data), "hello\nworld") {
		t.Fatalf("script-only run %+v: %q", s, data)
	}
	if e := one(empty); e.Status != schema.RunSilent {
		t.Fatalf("a script printing nothing: %+v", e)
	}
	var fedPrompt string
	for _, p := range a.calls() {
		if strings.Contains(p, "What number did the script print?") {
			fedPrompt = p
		}
	}
	if !strings.Contains(fedPrompt, "42") || one(fed).Status != schema.RunOK {
		t.Fatalf("the script's output did not reach the prompt: %q", fedPrompt)
	}
	if d := one(danger); d.Status != schema.RunFailed || !strings.Contains(d.Error, "denied") {
		t.Fatalf("dangerous script %+v", d)
	}
	sl := one(slow)
	data, _ = os.ReadFile(sl.Outcomes["local"].Path)
	if sl.Status != schema.RunFailed || !strings.Contains(sl.Error, "timed out after 1s") || !strings.Contains(string(data), "failed") {
		t.Fatalf("slow run %+v: %q", sl, data)
	}
	if rm := one(remote); !strings.Contains(rm.Outcomes["telegram:111111"].Error, "no gateway runs in this process") {
		t.Fatalf("platform target without a gateway: %+v", rm.Outcomes)
	}
}

// TestRunNowAndInterruptedByStop: a manual run runs at once; a run cut
// short by the scheduler stopping is recorded interrupted and retried by
// the next start.
func TestRunNowAndInterruptedByStop(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	clock := crontest.NewClock(t0)
	started := make(chan struct{}, 1)
	block := true
	var mu sync.Mutex
	a := &stubAgent{reply: func(ctx context.Context, job *cron.Job, _ string) (string, error) {
		mu.Lock()
		b := block
		mu.Unlock()
		if !b {
			return "finished", nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}}
	r := startScheduler(t, dir, clock, cron.Config{}, stub(a))
	j := mustCreate(t, r.jobs, schema.JobSpec{Name: "nightly", Schedule: "every 1h", Prompt: "p"})
	if _, err := r.jobs.Pause(ctx, j.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sched.RunNow(ctx, j.ID[:6]); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("run of a paused job: %v", err)
	}
	if _, err := r.jobs.Resume(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	block = false
	mu.Unlock()
	run, err := r.sched.RunNow(ctx, "nightly")
	if err != nil || run.Status != schema.RunOK || run.Trigger != schema.TriggerManual || !run.Outcomes["local"].Delivered {
		t.Fatalf("manual run %+v %v", run, err)
	}

	mu.Lock()
	block = true
	mu.Unlock()
	clock.Set(t0.Add(time.Hour))
	<-started
	r.stop()
	rs := runs(t, r.store, j.ID)
	if len(rs) != 2 || rs[1].Status != schema.RunInterrupted || !strings.Contains(rs[1].Error, "stopped") {
		t.Fatalf("after stop: %+v", rs[len(rs)-1])
	}
	mu.Lock()
	block = false
	mu.Unlock()
	r2 := startScheduler(t, dir, clock, cron.Config{}, stub(a))
	waitFor(t, "the retry", func() bool { return settled(t, r2.store, j.ID, 3) })
	if rr := runs(t, r2.store, j.ID)[2]; rr.Trigger != schema.TriggerRetry || rr.Attempt != 2 || rr.Status != schema.RunOK {
		t.Fatalf("retry %+v", rr)
	}
}

func TestAckOfAnUnknownRunIsIgnored(t *testing.T) {
	dir := t.TempDir()
	r := startScheduler(t, dir, crontest.NewClock(t0), cron.Config{}, nil)
	for _, in := range []schema.Inbound{{Kind: "delivered", Key: "cron/nope", ReplyID: "r|telegram:1"}, {Kind: "failed", Key: "cron/x", ReplyID: "no-separator"}, {Kind: "delivered", Key: "telegram/1"}} {
		if err := r.sched.Ack(in); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("ack %+v: %v", in, err)
		}
	}
}

// capture is a bus that keeps what it is given and delivers nothing.
type capture chan schema.Outbound

func (c capture) Publish(_ context.Context, out schema.Outbound) error {
	c <- out
	return nil
}

// TestPlatformDeliveryWaitsForTheAdapter: a platform delivery is done
// when the adapter's outcome comes back (Ack, as the router hands it);
// without one it fails after AckTimeout, saying so.
func TestPlatformDeliveryWaitsForTheAdapter(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	bus := make(capture, 4)
	r := startScheduler(t, dir, clock, cron.Config{Bus: bus}, stub(&stubAgent{}))
	acked := mustCreate(t, r.jobs, schema.JobSpec{Name: "acked", Schedule: "every 1h", Prompt: "p", Deliver: "telegram:1"})
	silent := mustCreate(t, r.jobs, schema.JobSpec{Name: "unacked", Schedule: "every 1h", Prompt: "p", Deliver: "telegram:2"})
	waitFor(t, "the timers", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	clock.Set(t0.Add(time.Hour))
	outs := map[string]schema.Outbound{}
	for range 2 {
		o := <-bus
		outs[o.Chat] = o
	}
	o := outs["1"]
	if o.Key != "cron/"+acked.ID || o.Platform != "telegram" || !strings.HasSuffix(o.ReplyID, "|telegram:1") || o.Text != "done: acked" {
		t.Fatalf("outbound %+v", o)
	}
	if err := r.sched.Ack(schema.Inbound{Kind: "delivered", Key: o.Key, Platform: "telegram", Chat: "1", ReplyID: o.ReplyID, PlatformMessageIDs: []string{"9"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the acknowledged delivery", func() bool { return settled(t, r.store, acked.ID, 1) })
	if oc := runs(t, r.store, acked.ID)[0].Outcomes["telegram:1"]; !oc.Delivered {
		t.Fatalf("outcome %+v", oc)
	}
	// An acknowledgement given twice changes nothing.
	r.sched.Ack(schema.Inbound{Kind: "failed", Key: o.Key, ReplyID: o.ReplyID, Error: "late"})
	if oc := runs(t, r.store, acked.ID)[0].Outcomes["telegram:1"]; !oc.Delivered {
		t.Fatalf("a second acknowledgement rewrote the outcome: %+v", oc)
	}
	time.Sleep(50 * time.Millisecond)
	if settled(t, r.store, silent.ID, 1) {
		t.Fatal("a delivery nobody acknowledged is closed before its timeout")
	}
	waitFor(t, "the acknowledgement timer", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour + cron.DefaultAckTimeout)) })
	clock.Advance(cron.DefaultAckTimeout)
	waitFor(t, "the unacknowledged delivery to time out", func() bool { return settled(t, r.store, silent.ID, 1) })
	if oc := runs(t, r.store, silent.ID)[0].Outcomes["telegram:2"]; !strings.Contains(oc.Error, "no delivery acknowledgement from the telegram adapter within 2m0s") {
		t.Fatalf("outcome %+v", oc)
	}
}

type noopTool struct{}

func (noopTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "noop", Description: "does nothing", Parameters: map[string]any{"type": "object"}}
}
func (noopTool) Flags() tool.Flags { return tool.Flags{} }
func (noopTool) Run(context.Context, json.RawMessage) (string, error) {
	return "nothing happened", nil
}

// TestPerJobCostCap: a job's max cost stops its run through the session's
// cost cap (checked before each model call); its cost is recorded.
func TestPerJobCostCap(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "noop", Args: `{}`}}, Prompt: 1000, Completion: 100})
	defer srv.Close()
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	r := startScheduler(t, dir, clock, cron.Config{}, func(store *embedded.Store, sys *actor.ActorSystem) cron.Agent {
		deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
			Tools: tool.NewTools(noopTool{}), Exec: toolrun.NewPool(sys, 4, 30*time.Second), MaxTurns: 50,
			Cfg: agent.Config{Model: "pricey", Prices: model.Prices{"pricey": {Input: 100, Output: 100}}}} // $0.11 a call
		return &cron.SessionAgent{Sys: sys, Deps: deps, Create: func(ctx context.Context, id string, job *cron.Job) error {
			return session.Create(ctx, store, id, session.Start{Source: "cron", Model: "pricey", System: "s"})
		}}
	})
	j := mustCreate(t, r.jobs, schema.JobSpec{Schedule: "every 1h", Prompt: "loop forever", MaxCostUSD: 0.3})
	waitFor(t, "the timer", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	clock.Set(t0.Add(time.Hour))
	waitFor(t, "the capped run", func() bool { return settled(t, r.store, j.ID, 1) })
	run := runs(t, r.store, j.ID)[0]
	if run.Status != schema.RunFailed || !strings.Contains(run.Error, "cost cap reached") || run.CostUSD < 0.3 || run.CostUSD > 0.45 {
		t.Fatalf("capped run %+v", run)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3 ($0.33 reaches the $0.30 cap)", n)
	}
}

// blocking counts runs in flight and lets them go on demand.
type blocking struct {
	mu        sync.Mutex
	now, peak int
	release   chan struct{}
}

func (b *blocking) Run(ctx context.Context, _ string, job *cron.Job, _ string) (string, float64, error) {
	b.mu.Lock()
	b.now++
	b.peak = max(b.peak, b.now)
	b.mu.Unlock()
	defer func() { b.mu.Lock(); b.now--; b.mu.Unlock() }()
	select {
	case <-b.release:
		return "ok", 0, nil
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// TestMaxConcurrentRuns: five jobs due at once run two at a time; the
// others wait for a free slot and run on time all the same.
func TestMaxConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	b := &blocking{release: make(chan struct{})}
	r := startScheduler(t, dir, clock, cron.Config{MaxConcurrent: 2, Agent: b}, nil)
	var ids []string
	for range 5 {
		ids = append(ids, mustCreate(t, r.jobs, schema.JobSpec{Schedule: "every 1h", Prompt: "p", Deliver: "none"}).ID)
	}
	waitFor(t, "the timers", func() bool { st, _ := r.sched.Stats(); return st.Timed == 5 })
	clock.Set(t0.Add(time.Hour))
	waitFor(t, "two runs", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.now == 2 })
	if st, _ := r.sched.Stats(); st.Waiting != 3 {
		t.Fatalf("stats %+v: three should wait", st)
	}
	for range 5 {
		b.release <- struct{}{}
	}
	for _, id := range ids {
		waitFor(t, "all five", func() bool { return settled(t, r.store, id, 1) })
		if run := runs(t, r.store, id)[0]; run.Trigger != schema.TriggerSchedule || run.Status != schema.RunOK {
			t.Fatalf("run %+v", run)
		}
	}
	if b.peak != 2 {
		t.Fatalf("%d runs at once, max 2", b.peak)
	}
}

// settleSpy is a store that records the settle each subscription asks
// for.
type settleSpy struct {
	events.Store
	mu      sync.Mutex
	settles []time.Duration
}

func (s *settleSpy) SubscribeAll(ctx context.Context, after uint64, handle func(events.Recorded) error) error {
	s.mu.Lock()
	s.settles = append(s.settles, events.SettleOf(ctx))
	s.mu.Unlock()
	return s.Store.SubscribeAll(ctx, after, handle)
}

// TestSchedulerFollowsTheLogSettled: the scheduler follows the log with a
// settle (a busy log is read once per burst of commits, not once per
// commit), and still sees a job another process creates.
func TestSchedulerFollowsTheLogSettled(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	spy := &settleSpy{Store: openStore(t, dir)}
	s := cron.New(spy, cron.NewJobs(spy, clock.Now), actors.NewSystem(zerolog.Nop()), cron.Config{Clock: clock, OutputDir: filepath.Join(dir, "output"), Agent: &stubAgent{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-s.Ready()
	cli := cron.NewJobs(openStore(t, dir), clock.Now)
	mustCreate(t, cli, schema.JobSpec{Schedule: "every 1h", Prompt: "p"})
	waitFor(t, "the scheduler to see the job", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.settles) != 1 || spy.settles[0] != cron.FollowSettle {
		t.Fatalf("the scheduler subscribed with settles %v, want one of %s", spy.settles, cron.FollowSettle)
	}
}
