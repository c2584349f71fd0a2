package cron

import (
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleNextTimes walks every schedule form through its next
// slots, across the daylight-saving changes of Europe/Berlin (2026-03-29
// 02:00→03:00, 2026-10-25 03:00→02:00) and America/New_York (2026-03-08
// 02:00→03:00, 2026-11-01 02:00→01:00).
func TestScheduleNextTimes(t *testing.T) {
	cases := []struct {
		name     string
		schedule string
		tz       string
		from     string
		want     []string // in UTC
	}{
		{"weekdays at 9, Berlin, across spring forward", "0 9 * * 1-5", "Europe/Berlin", "2026-03-26T12:00:00Z",
			[]string{"2026-03-27T08:00:00Z", "2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z"}},
		{"02:30 daily, Berlin: the skipped time fires at the end of the gap", "30 2 * * *", "Europe/Berlin", "2026-03-28T11:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		{"02:30 daily, Berlin: the repeated time fires once", "30 2 * * *", "Europe/Berlin", "2026-10-24T11:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"every 30 minutes, Berlin, through both passes of the repeated hour", "*/30 * * * *", "Europe/Berlin", "2026-10-24T23:50:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"}},
		{"every 30 minutes, Berlin, over the skipped hour", "*/30 * * * *", "Europe/Berlin", "2026-03-29T00:40:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}},
		{"weekdays at 9, New York, across spring forward", "0 9 * * 1-5", "America/New_York", "2026-03-05T20:00:00Z",
			[]string{"2026-03-06T14:00:00Z", "2026-03-09T13:00:00Z", "2026-03-10T13:00:00Z"}},
		{"02:30 daily, New York: the skipped time fires at 03:00 EDT", "30 2 * * *", "America/New_York", "2026-03-07T17:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"01:30 daily, New York: once on the night the clocks go back", "30 1 * * *", "America/New_York", "2026-10-31T17:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"hourly, New York: both 01:00s", "0 * * * *", "America/New_York", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"CRON_TZ prefix", "CRON_TZ=Europe/Berlin 0 9 * * *", "", "2026-07-01T00:00:00Z",
			[]string{"2026-07-01T07:00:00Z", "2026-07-02T07:00:00Z"}},
		{"descriptor", "@daily", "America/New_York", "2026-11-01T00:00:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"}},
		{"UTC", "15 6 1 * *", "UTC", "2026-01-15T00:00:00Z",
			[]string{"2026-02-01T06:15:00Z", "2026-03-01T06:15:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from := utc(c.from)
			p, err := ParseSchedule(c.schedule, c.tz, from)
			if err != nil {
				t.Fatal(err)
			}
			if p.Schedule.Kind() != KindCron {
				t.Fatalf("kind %s", p.Schedule.Kind())
			}
			loaded, err := LoadSchedule(p.Canonical, p.Timezone, time.Time{})
			if err != nil {
				t.Fatalf("stored form %q/%q does not load: %v", p.Canonical, p.Timezone, err)
			}
			at, at2 := from, from
			for i, w := range c.want {
				at, at2 = p.Schedule.Next(at), loaded.Next(at2)
				if !at.Equal(utc(w)) || !at2.Equal(at) {
					t.Fatalf("slot %d: got %s (stored form %s), want %s", i, at.UTC().Format(time.RFC3339), at2.UTC().Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestIntervalsAndOneShots(t *testing.T) {
	now := utc("2026-03-29T00:10:00Z") // Berlin's spring-forward night
	p, err := ParseSchedule("every 30m", "Europe/Berlin", now)
	if err != nil {
		t.Fatal(err)
	}
	if p.Canonical != "every 30m" || p.Schedule.Kind() != KindInterval {
		t.Fatalf("%+v", p)
	}
	iv, _ := LoadSchedule(p.Canonical, p.Timezone, now)
	at := now
	for _, w := range []string{"2026-03-29T00:40:00Z", "2026-03-29T01:10:00Z", "2026-03-29T01:40:00Z"} {
		if at = iv.Next(at); !at.Equal(utc(w)) {
			t.Fatalf("interval slot %s, want %s: intervals are absolute time", at.UTC(), w)
		}
	}
	// A time between slots gives the next slot of the same grid.
	if got := iv.Next(utc("2026-03-29T05:11:00Z")); !got.Equal(utc("2026-03-29T05:40:00Z")) {
		t.Fatalf("mid-grid next %s", got)
	}
	for in, want := range map[string]string{"every 2h": "every 2h", "every 1d": "every 1d", "every 90 minutes": "every 90m", "@every 1h30m": "every 90m", "EVERY 45 mins": "every 45m"} {
		p, err := ParseSchedule(in, "", now)
		if err != nil || p.Canonical != want {
			t.Errorf("%q: %q %v, want %q", in, p.Canonical, err, want)
		}
	}

	oneShots := []struct{ in, tz, want string }{
		{"in 2h", "", "2026-03-29T02:10:00Z"},
		{"30m", "", "2026-03-29T00:40:00Z"},
		{"in 1d", "", "2026-03-30T00:10:00Z"},
		{"2026-06-01T09:00:00Z", "", "2026-06-01T09:00:00Z"},
		{"2026-06-01T09:00:00+02:00", "America/New_York", "2026-06-01T07:00:00Z"},
		{"2026-06-01T09:00", "Europe/Berlin", "2026-06-01T07:00:00Z"},
		{"2026-06-01 09:00", "America/New_York", "2026-06-01T13:00:00Z"},
		{"2026-06-01", "UTC", "2026-06-01T00:00:00Z"},
		// a wall time the clocks skip: the end of the gap
		{"2026-03-29T02:30", "Europe/Berlin", "2026-03-29T01:00:00Z"},
		// a wall time shown twice: the first
		{"2026-11-01T01:30", "America/New_York", "2026-11-01T05:30:00Z"},
	}
	for _, c := range oneShots {
		p, err := ParseSchedule(c.in, c.tz, now)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if p.Schedule.Kind() != KindOnce || !p.Schedule.Next(now).Equal(utc(c.want)) {
			t.Errorf("%q in %q: fires %s, want %s", c.in, c.tz, p.Schedule.Next(now).UTC(), c.want)
		}
		if next := p.Schedule.Next(utc(c.want)); !next.IsZero() {
			t.Errorf("%q fires again at %s", c.in, next)
		}
		loaded, err := LoadSchedule(p.Canonical, p.Timezone, time.Time{})
		if err != nil || !loaded.Next(now).Equal(utc(c.want)) {
			t.Errorf("%q: stored form %q reloads as %v, %v", c.in, p.Canonical, loaded, err)
		}
	}
}

func TestBadSchedulesAreRefused(t *testing.T) {
	now := utc("2026-05-01T12:00:00Z")
	cases := []struct{ in, tz, want string }{
		{"", "", "the schedule is empty"},
		{"61 * * * *", "", "invalid cron expression"},
		{"0 9 * * 8", "", "invalid cron expression"},
		{"0 0 0 * * *", "", "use 5"},
		{"0 0 30 2 *", "", "never fires"},
		{"* * * *", "", "invalid schedule"},
		{"tomorrow morning", "", "invalid schedule"},
		{"every 10s", "", "shortest interval"},
		{"every fortnight", "", "invalid duration"},
		{"in 0m", "", "must be positive"},
		{"2026-04-30T12:00:00Z", "", "in the past"},
		{"2026-05-01T11:59", "UTC", "in the past"},
		{"2026-13-01T00:00", "", "invalid time"},
		{"0 9 * * *", "Mars/Olympus_Mons", "unknown time zone"},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", "America/New_York", "give one of them"},
		{"CRON_TZ=Europe/Berlin", "", "no cron expression"},
		{"@reboot", "", "not a schedule"},
		{"@fortnightly", "", "invalid cron schedule"},
	}
	for _, c := range cases {
		_, err := ParseSchedule(c.in, c.tz, now)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q (tz %q): error %v, want one saying %q", c.in, c.tz, err, c.want)
		}
	}
}

func BenchmarkCronNext(b *testing.B) {
	p, _ := ParseSchedule("0 9 * * 1-5", "Europe/Berlin", utc("2026-01-01T00:00:00Z"))
	at := utc("2026-01-01T00:00:00Z")
	b.ReportAllocs()
	for b.Loop() {
		at = p.Schedule.Next(at)
	}
}
