package cron

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	rcron "github.com/robfig/cron/v3"
)

// Schedule says when a job fires.
type Schedule interface {
	// Next is the first slot strictly after t, or the zero time when
	// there is none (a one-shot that has passed).
	Next(t time.Time) time.Time
	// Kind is cron, interval or once.
	Kind() string
	// String is the canonical text stored in JobSpec.Schedule.
	String() string
}

// Kinds of schedule.
const (
	KindCron     = "cron"
	KindInterval = "interval"
	KindOnce     = "once"
)

// MinInterval is the shortest interval a job may repeat at.
const MinInterval = time.Minute

// Parsed is a schedule as a person wrote it, made canonical.
type Parsed struct {
	Schedule Schedule
	// Canonical is what JobSpec.Schedule stores; Timezone the zone it is
	// read in (from a CRON_TZ= prefix or the timezone given).
	Canonical string
	Timezone  string
}

// scheduleHelp lists the forms a schedule may take; errors end with it.
const scheduleHelp = `use a 5-field cron expression ("0 9 * * 1-5", optionally prefixed by CRON_TZ=Europe/Berlin), ` +
	`an interval ("every 30m", "every 2h", "every 1d"), or a one-shot ("in 2h", "30m", "2026-06-01T09:00", "2026-06-01T09:00:00Z")`

var (
	cronParser = rcron.NewParser(rcron.Minute | rcron.Hour | rcron.Dom | rcron.Month | rcron.Dow | rcron.Descriptor)
	durationRe = regexp.MustCompile(`^(\d+)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$`)
	cronField  = regexp.MustCompile(`^[0-9A-Za-z*?,/\-]+$`)
	dateRe     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)
)

// ParseSchedule reads a schedule a person wrote. tz is the job's time
// zone ("" for the local one); a CRON_TZ= prefix sets it too. Relative
// one-shots ("in 2h") are resolved against now, and a one-shot that is not
// in the future is refused.
func ParseSchedule(text, tz string, now time.Time) (Parsed, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return Parsed{}, errors.New("the schedule is empty: " + scheduleHelp)
	}
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok {
			continue
		}
		name, expr, _ := strings.Cut(rest, " ")
		if tz != "" && tz != name {
			return Parsed{}, fmt.Errorf("the schedule says %s%s but the time zone given is %s: give one of them", prefix, name, tz)
		}
		tz, s = name, strings.TrimSpace(expr)
		if s == "" {
			return Parsed{}, fmt.Errorf("schedule %q has a time zone but no cron expression: %s", text, scheduleHelp)
		}
	}
	loc, err := loadZone(tz)
	if err != nil {
		return Parsed{}, err
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "every "):
		d, err := parseDuration(strings.TrimSpace(s[len("every "):]))
		if err != nil {
			return Parsed{}, fmt.Errorf("schedule %q: %v", text, err)
		}
		if d < MinInterval {
			return Parsed{}, fmt.Errorf("schedule %q: the shortest interval is %s", text, MinInterval)
		}
		iv := Interval{Every: d}
		return Parsed{Schedule: iv, Canonical: iv.String(), Timezone: tz}, nil
	case strings.HasPrefix(lower, "@every "):
		return ParseSchedule("every "+strings.TrimSpace(s[len("@every "):]), tz, now)
	case strings.HasPrefix(lower, "in "):
		d, err := parseDuration(strings.TrimSpace(s[len("in "):]))
		if err != nil {
			return Parsed{}, fmt.Errorf("schedule %q: %v", text, err)
		}
		return once(text, now.Add(d), tz, now)
	case strings.HasPrefix(s, "@"):
		if lower == "@reboot" {
			return Parsed{}, fmt.Errorf("schedule %q: @reboot is not a schedule here: %s", text, scheduleHelp)
		}
		c, err := newCron(s, loc)
		if err != nil {
			return Parsed{}, fmt.Errorf("invalid cron schedule %q: %v", text, err)
		}
		return Parsed{Schedule: c, Canonical: c.String(), Timezone: tz}, nil
	}
	if fields := strings.Fields(s); len(fields) >= 5 && allMatch(fields[:5], cronField) {
		if len(fields) != 5 {
			return Parsed{}, fmt.Errorf("invalid cron expression %q: it has %d fields; use 5 (minute hour day-of-month month day-of-week)", text, len(fields))
		}
		c, err := newCron(strings.Join(fields, " "), loc)
		if err != nil {
			return Parsed{}, fmt.Errorf("invalid cron expression %q: %v", text, err)
		}
		if c.Next(now).IsZero() {
			return Parsed{}, fmt.Errorf("cron expression %q never fires", text)
		}
		return Parsed{Schedule: c, Canonical: c.String(), Timezone: tz}, nil
	}
	if strings.Contains(s, "T") || dateRe.MatchString(s) {
		at, err := parseTime(s, loc)
		if err != nil {
			return Parsed{}, fmt.Errorf("invalid time %q: %v; %s", text, err, scheduleHelp)
		}
		return once(text, at, tz, now)
	}
	if d, err := parseDuration(s); err == nil {
		return once(text, now.Add(d), tz, now)
	}
	return Parsed{}, fmt.Errorf("invalid schedule %q: %s", text, scheduleHelp)
}

func once(text string, at time.Time, tz string, now time.Time) (Parsed, error) {
	if !at.After(now) {
		return Parsed{}, fmt.Errorf("one-shot schedule %q is in the past (%s, now is %s): give a future time",
			text, at.Format(time.RFC3339), now.In(at.Location()).Format(time.RFC3339))
	}
	o := Once{At: at}
	return Parsed{Schedule: o, Canonical: o.String(), Timezone: tz}, nil
}

func allMatch(fields []string, re *regexp.Regexp) bool {
	for _, f := range fields {
		if !re.MatchString(f) {
			return false
		}
	}
	return true
}

// parseDuration reads "30m", "2h", "1d", "90 minutes", or a Go duration
// such as "1h30m".
func parseDuration(s string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if m := durationRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[m[2][0]]
		if n <= 0 {
			return 0, fmt.Errorf("duration %q must be positive", s)
		}
		if time.Duration(n) > (1<<62)/unit {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid duration %q: use a form such as 30m, 2h or 1d", s)
	}
	return d, nil
}

// parseTime reads an RFC 3339 time, or a local date and time read in loc.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if w, err := time.Parse(layout, s); err == nil {
			return resolveWall(w, loc), nil
		}
	}
	return time.Time{}, errors.New("not a date and time")
}

func loadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin or America/New_York", tz)
	}
	return loc, nil
}

// LoadSchedule rebuilds a stored schedule (JobSpec.Schedule, which is
// canonical). anchor is when an interval started counting: its slots are
// anchor + k·Every, k ≥ 1.
func LoadSchedule(canonical, tz string, anchor time.Time) (Schedule, error) {
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(canonical, "every "); ok {
		d, err := parseDuration(rest)
		if err != nil {
			return nil, err
		}
		return Interval{Every: d, Anchor: anchor}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, canonical); err == nil {
		return Once{At: t}, nil
	}
	return newCron(canonical, loc)
}

// Interval fires every Every, counted from Anchor (absolute time: an
// interval is not stretched or shrunk by daylight saving changes).
type Interval struct {
	Every  time.Duration
	Anchor time.Time
}

// Next implements Schedule.
func (iv Interval) Next(t time.Time) time.Time {
	if t.Before(iv.Anchor) {
		return iv.Anchor.Add(iv.Every)
	}
	k := t.Sub(iv.Anchor)/iv.Every + 1
	return iv.Anchor.Add(k * iv.Every)
}

// Kind implements Schedule.
func (Interval) Kind() string { return KindInterval }

// String implements Schedule: "every 30m", "every 2h", "every 1d".
func (iv Interval) String() string {
	switch d := iv.Every; {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("every %dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("every %dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("every %dm", d/time.Minute)
	default:
		return "every " + d.String()
	}
}

// Once fires at At and never again.
type Once struct{ At time.Time }

// Next implements Schedule.
func (o Once) Next(t time.Time) time.Time {
	if o.At.After(t) {
		return o.At
	}
	return time.Time{}
}

// Kind implements Schedule.
func (Once) Kind() string { return KindOnce }

// String implements Schedule: the RFC 3339 time.
func (o Once) String() string { return o.At.Format(time.RFC3339) }

// Cron is a 5-field cron expression read in a time zone, with the
// daylight-saving behaviour of cron(8):
//
//   - an expression with fixed hours ("30 2 * * *") fires once per
//     wall-clock time: on the night the clocks go back, 02:30 fires at its
//     first occurrence only; a time the clocks skip fires at the end of the
//     gap (02:30 on a spring-forward night fires at 03:00);
//   - an expression firing every hour ("*/15 * * * *") follows real time:
//     every 15 minutes, through both passes of a repeated hour.
type Cron struct {
	expr string
	loc  *time.Location
	// wall is set for fixed hours: spec then runs in UTC over wall-clock
	// times, which resolveWall maps to instants in loc.
	wall bool
	spec *rcron.SpecSchedule
}

const allHours = 1<<24 - 1

func newCron(expr string, loc *time.Location) (*Cron, error) {
	sch, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	spec, ok := sch.(*rcron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%q is not a calendar schedule", expr)
	}
	c := &Cron{expr: expr, loc: loc, wall: spec.Hour&allHours != allHours, spec: spec}
	if c.wall {
		spec.Location = time.UTC
	} else {
		spec.Location = loc
	}
	return c, nil
}

// Kind implements Schedule.
func (*Cron) Kind() string { return KindCron }

// String implements Schedule: the expression.
func (c *Cron) String() string { return c.expr }

// Next implements Schedule.
func (c *Cron) Next(t time.Time) time.Time {
	if !c.wall {
		return c.spec.Next(t)
	}
	w := wallOf(t, c.loc)
	for range 1000 {
		w = c.spec.Next(w)
		if w.IsZero() {
			return w
		}
		if at := resolveWall(w, c.loc); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// wallOf is t's wall-clock reading in loc, as a UTC time.
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// resolveWall is the instant the wall-clock time w (a UTC time holding a
// reading of loc's clocks) happens in loc: the earlier one when the clocks
// show it twice, the end of the gap when they skip it. time.Date leaves
// both cases unspecified (and resolves them differently per zone).
func resolveWall(w time.Time, loc *time.Location) time.Time {
	guess := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	start, end := guess.ZoneBounds()
	offsets := []time.Time{guess}
	if !start.IsZero() {
		offsets = append(offsets, start.Add(-time.Second))
	}
	if !end.IsZero() {
		offsets = append(offsets, end)
	}
	var best time.Time
	for _, z := range offsets {
		_, off := z.Zone()
		at := w.Add(-time.Duration(off) * time.Second).In(loc)
		if wallOf(at, loc).Equal(w) && (best.IsZero() || at.Before(best)) {
			best = at
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: read with the offset in force before the gap (the smaller
	// one), the time lands after the gap, whose end is where that zone
	// period starts.
	minOff := 0
	for i, z := range offsets {
		if _, off := z.Zone(); i == 0 || off < minOff {
			minOff = off
		}
	}
	after := w.Add(-time.Duration(minOff) * time.Second).In(loc)
	gapEnd, _ := after.ZoneBounds()
	if gapEnd.IsZero() || gapEnd.After(after) {
		return after
	}
	return gapEnd.In(loc)
}
