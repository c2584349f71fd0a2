package cron_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

func openStore(t testing.TB, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(dir, "events.db"), embedded.WithPollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 6, 1, 6, 0, 0, 0, time.UTC) // a Monday, 08:00 in Berlin

func fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

func mustCreate(t testing.TB, jobs *cron.Jobs, spec schema.JobSpec) *cron.Job {
	t.Helper()
	n, err := cron.Normalize(spec, jobs.Now(), cron.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := jobs.Create(context.Background(), n, true, "cli")
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestBadJobDefinitionsAreRefused(t *testing.T) {
	rules := cron.Rules{Toolsets: []string{"web", "terminal", "file"}, Allowed: func(p string) bool { return p == "recursive-delete" }, Judge: judge.Check}
	ok := schema.JobSpec{Schedule: "every 1h", Prompt: "check the build"}
	cases := []struct {
		name string
		edit func(*schema.JobSpec)
		want string
	}{
		{"invalid cron", func(s *schema.JobSpec) { s.Schedule = "0 25 * * *" }, "invalid cron expression"},
		{"past one-shot", func(s *schema.JobSpec) { s.Schedule = "2026-05-31T00:00:00Z" }, "in the past"},
		{"unknown delivery target", func(s *schema.JobSpec) { s.Deliver = "email:ada@example.com:x:y" }, "unknown delivery target"},
		{"origin without a chat", func(s *schema.JobSpec) { s.Deliver = "origin" }, "no origin"},
		{"unknown toolset", func(s *schema.JobSpec) { s.Toolsets = []string{"web", "browser"} }, `unknown toolset "browser": the toolsets are file, terminal, web`},
		{"empty prompt and script", func(s *schema.JobSpec) { s.Prompt = "  " }, "needs a prompt"},
		{"no_agent without a script", func(s *schema.JobSpec) { s.NoAgent = true }, "give the script"},
		{"hard-line script", func(s *schema.JobSpec) { s.Script = "rm -rf /" }, "never allowed"},
		{"dangerous script not allowed", func(s *schema.JobSpec) { s.Script = "git reset --hard" }, "hermes approvals add git-reset-hard"},
		{"bad catch_up", func(s *schema.JobSpec) { s.CatchUp = "twice" }, "catch_up"},
		{"bad on_crash", func(s *schema.JobSpec) { s.OnCrash = "ignore" }, "on_crash"},
		{"negative cost cap", func(s *schema.JobSpec) { s.MaxCostUSD = -1 }, "max cost"},
		{"unknown time zone", func(s *schema.JobSpec) { s.Schedule, s.Timezone = "0 9 * * *", "Europe/Atlantis" }, "unknown time zone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			_, err := cron.Normalize(s, t0, rules)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	n, err := cron.Normalize(schema.JobSpec{Schedule: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", Prompt: "  summarise my inbox  ", Script: "rm -r ./cache",
		Toolsets: []string{"web", "file", "web"}}, t0, rules)
	if err != nil {
		t.Fatal(err)
	}
	want := schema.JobSpec{Name: "summarise my inbox", Schedule: "0 9 * * 1-5", Timezone: "Europe/Berlin", Prompt: "summarise my inbox", Script: "rm -r ./cache",
		Toolsets: []string{"file", "web"}, Deliver: "local", CatchUp: "once", OnCrash: "retry"}
	if got := n; got.Name != want.Name || got.Schedule != want.Schedule || got.Timezone != want.Timezone || got.Deliver != want.Deliver ||
		got.CatchUp != want.CatchUp || got.OnCrash != want.OnCrash || strings.Join(got.Toolsets, ",") != "file,web" {
		t.Fatalf("normalised %+v", got)
	}
	n, _ = cron.Normalize(schema.JobSpec{Schedule: "in 2h", Prompt: "p", Origin: &schema.JobOrigin{Platform: "telegram", Chat: "1"}}, t0, rules)
	if n.Schedule != "2026-06-01T08:00:00Z" || n.Deliver != "origin" {
		t.Fatalf("one-shot from a chat: %+v", n)
	}
}

func TestJobsCreateFindChangeAcrossWriters(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := cron.NewJobs(openStore(t, dir), fixed(t0))
	// A second writer on its own handle, as another process would be.
	b := cron.NewJobs(openStore(t, dir), fixed(t0.Add(time.Minute)))
	j1 := mustCreate(t, a, schema.JobSpec{Name: "inbox", Schedule: "0 9 * * *", Prompt: "summarise my inbox"})
	j2 := mustCreate(t, a, schema.JobSpec{Name: "build", Schedule: "every 30m", Prompt: "check the build"})
	if j1.ID == j2.ID || len(j1.ID) != 12 {
		t.Fatalf("ids %s %s", j1.ID, j2.ID)
	}
	for _, ref := range []string{j1.ID, j1.ID[:5], "INBOX"} {
		got, err := b.Find(ctx, ref)
		if err != nil || got.ID != j1.ID {
			t.Fatalf("find %q: %v %v", ref, got, err)
		}
	}
	if _, err := b.Find(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "hermes cron list") {
		t.Fatalf("unknown job: %v", err)
	}
	// a writes from a stale fold after b changed the job: its change is
	// decided again on b's and lands after it.
	if _, err := b.Pause(ctx, j1.ID, "holiday"); err != nil {
		t.Fatal(err)
	}
	got, err := a.Update(ctx, j1.ID, cron.Rules{}, func(s *schema.JobSpec) error { s.Schedule = "30 8 * * *"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Paused || got.Spec.Schedule != "30 8 * * *" || got.Revision != 2 {
		t.Fatalf("after both writers: %+v", got)
	}
	if _, err := a.Update(ctx, j1.ID, cron.Rules{}, func(s *schema.JobSpec) error { s.Schedule = "every 5s"; return nil }); err == nil {
		t.Fatal("a bad update was written")
	}
	if _, err := a.Update(ctx, j1.ID, cron.Rules{}, func(*schema.JobSpec) error { return nil }); !errors.Is(err, cron.ErrNothing) {
		t.Fatalf("an update changing nothing: %v", err)
	}
	if _, err := b.Resume(ctx, j1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Remove(ctx, j2.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pause(ctx, j2.ID, ""); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("pausing a removed job: %v", err)
	}
	all, err := cron.NewJobs(openStore(t, dir), nil).Load(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("load %d %v", len(all), err)
	}
	state := map[string]string{}
	for _, j := range all {
		state[j.ID] = j.State()
	}
	if state[j1.ID] != "active" || state[j2.ID] != "removed" {
		t.Fatalf("states %v", state)
	}
	rs, _ := a.Events(ctx, j1.ID)
	h, err := cron.History(rs)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range h {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, " ") != "created paused updated resumed" {
		t.Fatalf("history %v", kinds)
	}
}

// TestClaimRaces: many writers (on two store handles, as two processes)
// race to claim the same slot, a thousand times; each slot is claimed
// exactly once.
func TestClaimRaces(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	stores := []*embedded.Store{openStore(t, dir), openStore(t, dir)}
	created := t0
	j := mustCreate(t, cron.NewJobs(stores[0], fixed(created)), schema.JobSpec{Schedule: "every 1m", Prompt: "p", Deliver: "none"})
	const racers, slots = 6, 1000
	writers := make([]*cron.Jobs, racers)
	for i := range writers {
		writers[i] = cron.NewJobs(stores[i%2], fixed(created))
	}
	wins := make(chan string, slots*racers)
	for k := 1; k <= slots; k++ {
		now := created.Add(time.Duration(k)*time.Minute + time.Second)
		start := make(chan struct{})
		done := make(chan struct{}, racers)
		for i, w := range writers {
			go func() {
				defer func() { done <- struct{}{} }()
				<-start
				runID := "r-" + now.Format("1504") + "-" + string(rune('a'+i))
				var claim cron.Claim
				_, err := w.Append(ctx, j.ID, func(j *cron.Job) ([]schema.Payload, error) {
					c, err := j.Due(now, schema.JobRunStarted{RunID: runID})
					claim = c
					return c.Payloads, err
				})
				if err != nil {
					return
				}
				wins <- claim.Run.ScheduledFor.Format(time.RFC3339)
				if _, err := w.Append(ctx, j.ID, func(*cron.Job) ([]schema.Payload, error) {
					return []schema.Payload{schema.JobRunFinished{RunID: runID, Status: schema.RunSilent}}, nil
				}); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		for range racers {
			<-done
		}
	}
	close(wins)
	perSlot := map[string]int{}
	for s := range wins {
		perSlot[s]++
	}
	rs, _ := stores[0].ReadStream(ctx, cron.JobStream(j.ID), events.Forward, 0, 0)
	startedPerSlot := map[string]int{}
	for _, r := range rs {
		if r.Type == "JobRunStarted" {
			p, _ := schema.Decode(r.Envelope)
			startedPerSlot[p.(schema.JobRunStarted).ScheduledFor.Format(time.RFC3339)]++
		}
	}
	if len(perSlot) != slots || len(startedPerSlot) != slots {
		t.Fatalf("%d slots won, %d recorded, want %d", len(perSlot), len(startedPerSlot), slots)
	}
	for s, n := range startedPerSlot {
		if n != 1 || perSlot[s] != 1 {
			t.Fatalf("slot %s claimed %d times (%d winners)", s, n, perSlot[s])
		}
	}
}
