package terminal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// AllowList holds the rule descriptions the user approved for good
// (cmd/hermes hands in the grants of the event store with config's
// command_allowlist).
type AllowList interface {
	Has(pattern string) bool
	Add(pattern string) error
}

// Granter is an AllowList that keeps where a grant came from: Approver
// grants "always" answers through it, naming the session and the command
// the person was asked about.
type Granter interface {
	Grant(ctx context.Context, pattern, session, command string) error
}

// MemAllowList is an AllowList kept in memory (tests, sessions without a
// config file).
type MemAllowList struct {
	mu sync.Mutex
	m  map[string]bool
}

func (a *MemAllowList) Has(p string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[p]
}

func (a *MemAllowList) Add(p string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]bool{}
	}
	a.m[p] = true
	return nil
}

// Approver decides on dangerous commands of the local backend.
type Approver struct {
	Allow   AllowList
	Timeout time.Duration
	// Judge judges the commands; the zero value judges for the current
	// user (set AgentHome to the --home in use).
	Judge judge.Judge
}

type sessionApprovals struct {
	mu sync.Mutex
	m  map[string]bool
}

// Decisions a person can take.
const (
	Once    = "once"
	Session = "session"
	Always  = "always"
	Deny    = "deny"
)

// Approve returns nil when command may run; otherwise an error the model
// reads. Every decision on a flagged command is recorded as an event, one
// per rule. A command runs only when every part of it is approved: a
// hard-line part anywhere refuses the whole command, and the parts not yet
// approved for the session or allow-listed are asked about together.
func (a *Approver) Approve(ctx context.Context, command string) error {
	return a.ApproveIn(ctx, "", command)
}

// ApproveIn is Approve for a command that starts in dir ("" when unknown),
// so relative paths are judged where they point.
func (a *Approver) ApproveIn(ctx context.Context, dir, command string) error {
	jd := a.Judge
	if dir != "" {
		jd.Dir = dir
	}
	findings := jd.Findings(command)
	if len(findings) == 0 {
		return nil
	}
	env := tool.EnvFrom(ctx)
	record := func(pattern, decision, by string) {
		if env.Record != nil {
			env.Record(ctx, schema.ApprovalDecided{Command: command, Pattern: pattern, Decision: decision, By: by})
		}
	}
	for _, f := range findings {
		if f.Rule.Hard {
			record(f.Rule.Description, Deny, "hardline")
			return fmt.Errorf("blocked: %q is a %s (%s), which is never allowed, not even with --yolo", command, f.Rule.Description, f.Command)
		}
	}
	approved := env.Values.Get("terminal.approvals", func() any { return &sessionApprovals{m: map[string]bool{}} }).(*sessionApprovals)
	type part struct{ rule, by string }
	var already []part
	var pending []string
	var details []string
	for _, f := range findings {
		d := f.Rule.Description
		if slices.Contains(pending, d) || slices.ContainsFunc(already, func(p part) bool { return p.rule == d }) {
			continue
		}
		approved.mu.Lock()
		ok := approved.m[d]
		approved.mu.Unlock()
		switch {
		case ok:
			already = append(already, part{d, "session"})
		case a.Allow != nil && a.Allow.Has(d):
			already = append(already, part{d, "allowlist"})
		default:
			pending = append(pending, d)
			details = append(details, fmt.Sprintf("  - %s: %s", d, f.Command))
		}
	}
	run := func(decision, by string) error {
		for _, p := range already {
			dec := Session
			if p.by == "allowlist" {
				dec = Always
			}
			record(p.rule, dec, p.by)
		}
		for _, d := range pending {
			record(d, decision, by)
		}
		return nil
	}
	flagged := strings.Join(pending, " and ")
	switch {
	case len(pending) == 0:
		return run("", "")
	case env.Yolo:
		return run(Once, "yolo")
	case env.Asker == nil:
		for _, d := range pending {
			record(d, Deny, "timeout")
		}
		return fmt.Errorf("denied: %q needs approval (%s) and nobody can be asked; run with --yolo or add it to command_allowlist", command, flagged)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	text := fmt.Sprintf("The agent wants to run a command flagged as %s:\n  %s\n", flagged, command)
	if len(findings) > 1 || len(pending) > 1 {
		text += strings.Join(details, "\n") + "\n"
	}
	answer, err := env.Asker.Ask(actx, tool.Question{Kind: tool.QuestionApproval, Timeout: timeout, Text: text + "Allow it?",
		Choices: []string{Once, Session, Always, Deny}})
	if err != nil {
		for _, d := range pending {
			record(d, Deny, "timeout")
		}
		return fmt.Errorf("denied: no approval for %q (%s) within %s", command, flagged, timeout)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case Once, "o", "y", "yes":
		return run(Once, "user")
	case Session, "s":
		approved.mu.Lock()
		for _, d := range pending {
			approved.m[d] = true
		}
		approved.mu.Unlock()
		return run(Session, "user")
	case Always, "a":
		if a.Allow != nil {
			g, granter := a.Allow.(Granter)
			for _, d := range pending {
				var err error
				if granter {
					err = g.Grant(ctx, d, env.SessionID, command)
				} else {
					err = a.Allow.Add(d)
				}
				if err != nil {
					return fmt.Errorf("approved, but the allow-list could not be saved: %v", err)
				}
			}
		}
		return run(Always, "user")
	}
	for _, d := range pending {
		record(d, Deny, "user")
	}
	return fmt.Errorf("denied by the user: %q (%s); do not retry it, ask the user or find another way", command, flagged)
}
