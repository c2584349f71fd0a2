package cron

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/schema"
)

// Rules are what a job definition is checked against when it is created
// or changed.
type Rules struct {
	// Toolsets are the toolsets a job may name (nil: not checked).
	Toolsets []string
	// Allowed reports whether a dangerous-command rule, given by its ID,
	// is allowed for good: granted, or on config's command_allowlist (nil:
	// none is). A script runs with nobody to ask, so a flagged one must be
	// allowed beforehand.
	Allowed func(rule string) bool
	// Judge judges a script before it is stored: the hard-line rule it
	// breaks (never allowed) and the dangerous-command rule it trips
	// (allowed only where Allowed says so), nil for none. cmd/hermes wires
	// judge.Check; nil: scripts are not judged.
	Judge func(script string) (hard, danger *judge.Rule)
}

// MaxPromptBytes bounds a job's prompt and script.
const MaxPromptBytes = 32 << 10

// Normalize checks a job definition and returns it in its stored form:
// the schedule canonical (a relative one-shot resolved against now), the
// name, delivery and policies defaulted. Every refusal says what to do.
func Normalize(spec schema.JobSpec, now time.Time, rules Rules) (schema.JobSpec, error) {
	return normalize(spec, now, rules, nil)
}

// NormalizeUpdate is Normalize for a changed definition: a schedule left
// as it was is not checked again (a one-shot's time may have passed).
func NormalizeUpdate(prev, next schema.JobSpec, now time.Time, rules Rules) (schema.JobSpec, error) {
	return normalize(next, now, rules, &prev)
}

func normalize(spec schema.JobSpec, now time.Time, rules Rules, prev *schema.JobSpec) (schema.JobSpec, error) {
	s := spec
	s.Prompt, s.Script, s.Name = strings.TrimSpace(s.Prompt), strings.TrimSpace(s.Script), strings.TrimSpace(s.Name)
	if s.Prompt == "" && s.Script == "" {
		return s, errors.New("a job needs a prompt (what to ask the agent) or a script (a command to run): both are empty")
	}
	if s.NoAgent && s.Script == "" {
		return s, errors.New("no_agent runs a script instead of the agent: give the script")
	}
	for what, v := range map[string]string{"prompt": s.Prompt, "script": s.Script, "name": s.Name} {
		if len(v) > MaxPromptBytes {
			return s, fmt.Errorf("the %s is %d bytes; the most a job takes is %d", what, len(v), MaxPromptBytes)
		}
		if !utf8.ValidString(v) {
			return s, fmt.Errorf("the %s is not valid UTF-8", what)
		}
	}
	if s.Script != "" {
		var hard, danger *judge.Rule
		if rules.Judge != nil {
			hard, danger = rules.Judge(s.Script)
		}
		if hard != nil {
			return s, fmt.Errorf("blocked: the script %q is a %s, which is never allowed", s.Script, hard.Description)
		}
		if danger != nil && (rules.Allowed == nil || !rules.Allowed(danger.ID)) {
			return s, fmt.Errorf("the script %q is flagged as %s and nobody can approve it when the job runs: change the command, or have the person grant it (hermes approvals add %s, or %s in command_allowlist in config.yaml)",
				s.Script, danger.Description, danger.ID, danger.ID)
		}
	}
	if prev == nil || prev.Schedule != s.Schedule || prev.Timezone != s.Timezone {
		p, err := ParseSchedule(s.Schedule, s.Timezone, now)
		if err != nil {
			return s, err
		}
		s.Schedule, s.Timezone = p.Canonical, p.Timezone
	}
	if s.Name == "" {
		s.Name = defaultName(s)
	}
	if rules.Toolsets != nil {
		for _, t := range s.Toolsets {
			if !slices.Contains(rules.Toolsets, t) {
				known := slices.Clone(rules.Toolsets)
				slices.Sort(known)
				return s, fmt.Errorf("unknown toolset %q: the toolsets are %s", t, strings.Join(known, ", "))
			}
		}
	}
	s.Toolsets = slices.Compact(slices.Sorted(slices.Values(s.Toolsets)))
	if len(s.Toolsets) == 0 {
		s.Toolsets = nil
	}
	s.Deliver = strings.TrimSpace(s.Deliver)
	if s.Deliver == "" {
		s.Deliver = "local"
		if s.Origin != nil {
			s.Deliver = "origin"
		}
	}
	ts, err := ParseTargets(s.Deliver, s.Origin)
	if err != nil {
		return s, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
		if t.Origin {
			names[i] = "origin"
		}
	}
	if len(ts) == 0 {
		names = []string{"none"}
	}
	s.Deliver = strings.Join(names, ",")
	switch s.CatchUp = strings.ToLower(strings.TrimSpace(s.CatchUp)); s.CatchUp {
	case "":
		s.CatchUp = CatchUpOnce
	case CatchUpSkip, CatchUpOnce, CatchUpAll:
	default:
		return s, fmt.Errorf("catch_up %q: use skip, once (the default) or all", spec.CatchUp)
	}
	switch s.OnCrash = strings.ToLower(strings.TrimSpace(s.OnCrash)); s.OnCrash {
	case "":
		s.OnCrash = OnCrashRetry
	case OnCrashRetry, OnCrashFail:
	default:
		return s, fmt.Errorf("on_crash %q: use retry (once, the default) or fail", spec.OnCrash)
	}
	if s.TimeoutSeconds < 0 {
		return s, fmt.Errorf("timeout %ds: must not be negative (0: the default)", s.TimeoutSeconds)
	}
	if s.MaxCostUSD < 0 || math.IsNaN(s.MaxCostUSD) || math.IsInf(s.MaxCostUSD, 0) {
		return s, fmt.Errorf("max cost %v: use a positive number of US dollars (0: no cap of its own)", s.MaxCostUSD)
	}
	return s, nil
}

func defaultName(s schema.JobSpec) string {
	base := s.Prompt
	if base == "" {
		base = s.Script
	}
	base = strings.Join(strings.Fields(base), " ")
	if r := []rune(base); len(r) > 50 {
		base = string(r[:50]) + "…"
	}
	return base
}

// Changed names the fields in which b differs from a.
func Changed(a, b schema.JobSpec) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("name", a.Name != b.Name)
	add("schedule", a.Schedule != b.Schedule)
	add("timezone", a.Timezone != b.Timezone)
	add("prompt", a.Prompt != b.Prompt)
	add("script", a.Script != b.Script)
	add("no_agent", a.NoAgent != b.NoAgent)
	add("toolsets", !slices.Equal(a.Toolsets, b.Toolsets))
	add("model", a.Model != b.Model)
	add("deliver", a.Deliver != b.Deliver)
	add("catch_up", a.CatchUp != b.CatchUp)
	add("on_crash", a.OnCrash != b.OnCrash)
	add("timeout", a.TimeoutSeconds != b.TimeoutSeconds)
	add("max_cost", a.MaxCostUSD != b.MaxCostUSD)
	return out
}
