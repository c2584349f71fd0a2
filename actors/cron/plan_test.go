package cron

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

type step struct {
	at string
	p  schema.Payload
}

func fold(t *testing.T, steps ...step) *Job {
	t.Helper()
	j := NewJob("j1")
	for i, s := range steps {
		env := schema.MustEnvelope(schema.Meta{Time: utc(s.at)}, s.p)
		if err := j.Apply(events.Recorded{Envelope: env, Stream: JobStream("j1"), Revision: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func hourly(catchUp, onCrash string) schema.JobCreated {
	return schema.JobCreated{ID: "j1", Enabled: true, JobSpec: schema.JobSpec{Name: "n", Schedule: "every 1h", Prompt: "p", Deliver: "local", CatchUp: catchUp, OnCrash: onCrash}}
}

func started(id, slot, trigger string, attempt int) schema.JobRunStarted {
	return schema.JobRunStarted{RunID: id, ScheduledFor: utc(slot), Trigger: trigger, Attempt: attempt}
}

func due(t *testing.T, j *Job, now string) Claim {
	t.Helper()
	c, err := j.Due(utc(now), schema.JobRunStarted{RunID: "new"})
	if err != nil {
		t.Fatalf("due at %s: %v", now, err)
	}
	return c
}

func TestDueOnTimeAndNotBefore(t *testing.T) {
	j := fold(t, step{"2026-05-01T10:00:00Z", hourly("", "")})
	_, err := j.Due(utc("2026-05-01T10:59:59Z"), schema.JobRunStarted{})
	var nd *NotDueError
	if !errors.As(err, &nd) || !nd.Next.Equal(utc("2026-05-01T11:00:00Z")) {
		t.Fatalf("before the slot: %v", err)
	}
	c := due(t, j, "2026-05-01T11:00:00.2Z")
	if c.Run == nil || c.Run.Trigger != schema.TriggerSchedule || !c.Run.ScheduledFor.Equal(utc("2026-05-01T11:00:00Z")) || c.Run.Attempt != 1 || len(c.Payloads) != 1 {
		t.Fatalf("on time: %+v", c)
	}
	// While the run is open nothing more is claimed; once it is closed
	// the next slot is the next hour.
	j = fold(t, step{"2026-05-01T10:00:00Z", hourly("", "")}, step{"2026-05-01T11:00:00Z", started("r1", "2026-05-01T11:00:00Z", schema.TriggerSchedule, 1)})
	if _, err := j.Due(utc("2026-05-01T12:00:00Z"), schema.JobRunStarted{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("open run: %v", err)
	}
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T11:00:05Z")}, schema.JobRunFinished{RunID: "r1", Status: schema.RunOK, Output: "x"}), Revision: 2})
	if len(j.Open) != 1 || len(j.Open["r1"].Pending()) != 1 {
		t.Fatalf("a finished run waits for its delivery: %+v", j.Open)
	}
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T11:00:06Z")}, schema.JobDelivered{RunID: "r1", Target: "local", Path: "/x"}), Revision: 3})
	if len(j.Open) != 0 || j.Last.Output != "" || j.Last.Outcomes["local"].Path != "/x" {
		t.Fatalf("delivered run not closed: %+v %+v", j.Open, j.Last)
	}
	if got := j.NextSlot(); !got.Equal(utc("2026-05-01T12:00:00Z")) {
		t.Fatalf("next %s", got)
	}
}

func TestCatchUpPolicies(t *testing.T) {
	created := "2026-05-01T10:00:00Z"
	// Down from before 11:00 until 15:30: slots 11..15 (five) passed.
	now := "2026-05-01T15:30:00Z"
	t.Run("once", func(t *testing.T) {
		c := due(t, fold(t, step{created, hourly("once", "")}), now)
		m := c.Payloads[0].(schema.JobRunMissed)
		if m.Count != 4 || !m.First.Equal(utc("2026-05-01T11:00:00Z")) || !m.Last.Equal(utc("2026-05-01T14:00:00Z")) {
			t.Fatalf("missed %+v", m)
		}
		if c.Run.Trigger != schema.TriggerCatchUp || !c.Run.ScheduledFor.Equal(utc("2026-05-01T15:00:00Z")) {
			t.Fatalf("run %+v", c.Run)
		}
	})
	t.Run("skip", func(t *testing.T) {
		j := fold(t, step{created, hourly("skip", "")})
		c := due(t, j, now)
		if c.Run != nil || len(c.Payloads) != 1 || c.Payloads[0].(schema.JobRunMissed).Count != 5 {
			t.Fatalf("skip: %+v", c)
		}
		j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc(now)}, c.Payloads[0]), Revision: 1})
		if next := j.NextSlot(); !next.Equal(utc("2026-05-01T16:00:00Z")) {
			t.Fatalf("after skipping, next %s", next)
		}
	})
	t.Run("all", func(t *testing.T) {
		j := fold(t, step{created, hourly("all", "")})
		var slots []string
		for i := 0; ; i++ {
			c, err := j.Due(utc(now), schema.JobRunStarted{RunID: "r"})
			if err != nil {
				break
			}
			slots = append(slots, c.Run.ScheduledFor.Format("15:04"))
			j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc(now)}, *c.Run), Revision: uint64(2*i + 1)})
			j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc(now)}, schema.JobRunFinished{RunID: "r", Status: schema.RunSilent}), Revision: uint64(2*i + 2)})
		}
		if strings.Join(slots, " ") != "11:00 12:00 13:00 14:00 15:00" {
			t.Fatalf("all ran %v", slots)
		}
	})
	t.Run("all is bounded", func(t *testing.T) {
		j := fold(t, step{created, hourly("all", "")})
		c := due(t, j, "2026-05-11T10:30:00Z") // 240 slots passed
		m := c.Payloads[0].(schema.JobRunMissed)
		if m.Count != 240-MaxCatchUpAll || !c.Run.ScheduledFor.Equal(m.Last.Add(time.Hour)) {
			t.Fatalf("missed %+v, run %+v", m, c.Run)
		}
	})
	t.Run("a slot a little late is on time", func(t *testing.T) {
		c := due(t, fold(t, step{created, hourly("skip", "")}), "2026-05-01T11:20:00Z")
		if c.Run == nil || c.Run.Trigger != schema.TriggerSchedule {
			t.Fatalf("within grace: %+v", c)
		}
	})
	t.Run("long downtime of a minutely job", func(t *testing.T) {
		j := fold(t, step{created, schema.JobCreated{ID: "j1", Enabled: true, JobSpec: schema.JobSpec{Schedule: "* * * * *", Timezone: "UTC", Prompt: "p", CatchUp: "once"}}})
		c := due(t, j, "2026-08-01T10:00:30Z") // ~132,000 minutes later
		m := c.Payloads[0].(schema.JobRunMissed)
		if m.Count < maxEnumerate-1 || !c.Run.ScheduledFor.Equal(utc("2026-08-01T10:00:00Z")) || !m.Last.Equal(utc("2026-08-01T09:59:00Z")) {
			t.Fatalf("missed %+v, run %+v", m, c.Run)
		}
	})
}

func TestCrashPolicies(t *testing.T) {
	base := []step{{"2026-05-01T10:00:00Z", hourly("", "retry")}, {"2026-05-01T11:00:00Z", started("r1", "2026-05-01T11:00:00Z", schema.TriggerSchedule, 1)},
		{"2026-05-01T11:30:00Z", schema.JobRunFinished{RunID: "r1", Status: schema.RunInterrupted, Error: "crash"}}}
	j := fold(t, base...)
	if j.Retry == nil || len(j.Open) != 0 {
		t.Fatalf("retry not owed: %+v", j)
	}
	c := due(t, j, "2026-05-01T11:30:01Z")
	if c.Run.Trigger != schema.TriggerRetry || c.Run.Attempt != 2 || !c.Run.ScheduledFor.Equal(utc("2026-05-01T11:00:00Z")) {
		t.Fatalf("retry %+v", c.Run)
	}
	// The retry crashes too: no third attempt.
	j = fold(t, append(base,
		step{"2026-05-01T11:31:00Z", *c.Run},
		step{"2026-05-01T11:40:00Z", schema.JobRunFinished{RunID: "new", Status: schema.RunInterrupted}})...)
	if j.Retry != nil {
		t.Fatal("a retry that crashed is retried again")
	}
	if next := j.NextSlot(); !next.Equal(utc("2026-05-01T12:00:00Z")) {
		t.Fatalf("next %s", next)
	}
	// on_crash fail: nothing owed.
	base[0].p = hourly("", "fail")
	if j := fold(t, base...); j.Retry != nil {
		t.Fatal("on_crash fail retried")
	}
}

func TestPauseResumeOneShotAndManual(t *testing.T) {
	j := fold(t, step{"2026-05-01T10:00:00Z", hourly("", "")}, step{"2026-05-01T10:10:00Z", schema.JobPaused{Reason: "holiday"}})
	if _, err := j.Due(utc("2026-05-01T13:00:00Z"), schema.JobRunStarted{}); !errors.Is(err, ErrInactive) {
		t.Fatalf("paused: %v", err)
	}
	if _, err := j.Manual(utc("2026-05-01T13:00:00Z"), schema.JobRunStarted{}); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("manual run of a paused job: %v", err)
	}
	// Slots passed while paused are not owed after the resume.
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T13:10:00Z")}, schema.JobResumed{}), Revision: 2})
	if next := j.NextSlot(); !next.Equal(utc("2026-05-01T14:00:00Z")) {
		t.Fatalf("after resume next %s", next)
	}
	c, err := j.Manual(utc("2026-05-01T13:20:00Z"), schema.JobRunStarted{RunID: "m"})
	if err != nil || c.Run.Trigger != schema.TriggerManual {
		t.Fatalf("manual %+v %v", c, err)
	}
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T13:20:00Z")}, *c.Run), Revision: 3})
	if !j.LastSlot.IsZero() {
		t.Fatal("a manual run took a scheduled slot")
	}

	once := schema.JobCreated{ID: "j1", Enabled: true, JobSpec: schema.JobSpec{Schedule: "2026-05-01T12:00:00Z", Prompt: "p"}}
	j = fold(t, step{"2026-05-01T10:00:00Z", once})
	c = due(t, j, "2026-05-01T12:00:01Z")
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T12:00:01Z")}, *c.Run), Revision: 1})
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T12:00:02Z")}, schema.JobRunFinished{RunID: "new", Status: schema.RunSilent}), Revision: 2})
	if j.State() != "done" || !j.NextSlot().IsZero() {
		t.Fatalf("a one-shot that ran: %s %s", j.State(), j.NextSlot())
	}
	j.Apply(events.Recorded{Envelope: schema.MustEnvelope(schema.Meta{Time: utc("2026-05-01T12:30:00Z")}, schema.JobRemoved{}), Revision: 3})
	if j.State() != "removed" || j.Active() {
		t.Fatal("removed job still active")
	}
}

func TestSilentAnswers(t *testing.T) {
	for answer, silent := range map[string]bool{
		"[SILENT]": true, "  [silent]\n": true, "[SILENT] nothing new today": true, "3 builds checked.\n\n[SILENT]": true, "": true,
		"All green.": false, "I considered [SILENT] but here is the report": false, "Silent retry succeeded": false,
	} {
		if IsSilent(answer) != silent {
			t.Errorf("IsSilent(%q) = %v", answer, !silent)
		}
	}
}

func TestTargets(t *testing.T) {
	origin := &schema.JobOrigin{Platform: "telegram", Chat: "111", Thread: "7"}
	ts, err := ParseTargets("origin, local,telegram:222,slack:C1:t9,file", origin)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.String())
	}
	if strings.Join(names, " ") != "telegram:111:7 local telegram:222 slack:C1:t9" {
		t.Fatalf("targets %v", names)
	}
	// Matrix room ids hold colons; their threads are event ids ($...).
	for in, want := range map[string][2]string{
		"matrix:!abc:example.org":              {"!abc:example.org", ""},
		"matrix:!abc:example.org:8448":         {"!abc:example.org:8448", ""},
		"matrix:!abc:example.org:$ev1:xyz":     {"!abc:example.org", "$ev1:xyz"},
		"matrix:!abc:example.org:8448:$thread": {"!abc:example.org:8448", "$thread"},
	} {
		ts, err := ParseTargets(in, nil)
		if err != nil || len(ts) != 1 || ts[0].Chat != want[0] || ts[0].Thread != want[1] {
			t.Errorf("%q: %+v %v, want chat %q thread %q", in, ts, err, want[0], want[1])
		}
	}
	if ts, err := ParseTargets("telegram, local", nil); err != nil || len(ts) != 2 || !ts[0].Home || ts[0].Platform != "telegram" || ts[0].String() != "telegram" {
		t.Fatalf("a platform alone is its home channel: %+v %v", ts, err)
	}
	if ts, err := ParseTargets("none", nil); err != nil || len(ts) != 0 {
		t.Fatalf("none: %v %v", ts, err)
	}
	for in, want := range map[string]string{
		"origin": "no origin", "e mail": "unknown delivery target", "telegram:": "unknown delivery target", ":111": "unknown delivery target",
		"none,local": "cannot be combined", "local,,x:1": "empty target", "tele gram:1": "unknown delivery target",
		"matrix:!abc": "unknown delivery target", "telegram:1:2:3": "unknown delivery target",
	} {
		if _, err := ParseTargets(in, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
