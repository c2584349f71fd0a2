package terminal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// AllowList holds the rules the user approved for good, by their IDs
// (cmd/hermes hands in the grants of the event store with config's
// command_allowlist, whose older entries name rules by description: the
// list resolves them with judge.Key).
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
// config file). It keeps keys as judge.Key has them: a rule added by its
// description or an alias is had by its ID.
type MemAllowList struct {
	mu sync.Mutex
	m  map[string]bool
}

// Has reports whether the rule (or MCP tool) p is allowed.
func (a *MemAllowList) Has(p string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[judge.Key(p)]
}

// Add allows the rule (or MCP tool) p.
func (a *MemAllowList) Add(p string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]bool{}
	}
	a.m[judge.Key(p)] = true
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
	// Session approvals and the allow-list go by rule ID; the events and
	// the messages name rules by description.
	approved := env.Values.Get("terminal.approvals", func() any { return &sessionApprovals{m: map[string]bool{}} }).(*sessionApprovals)
	type part struct {
		rule *judge.Rule
		by   string
	}
	var already []part
	var pending []*judge.Rule
	var details []string
	for _, f := range findings {
		r := f.Rule
		if slices.Contains(pending, r) || slices.ContainsFunc(already, func(p part) bool { return p.rule == r }) {
			continue
		}
		approved.mu.Lock()
		ok := approved.m[r.ID]
		approved.mu.Unlock()
		switch {
		case ok:
			already = append(already, part{r, "session"})
		case a.Allow != nil && a.Allow.Has(r.ID):
			already = append(already, part{r, "allowlist"})
		default:
			pending = append(pending, r)
			details = append(details, fmt.Sprintf("  - %s: %s", r.Description, f.Command))
		}
	}
	run := func(decision, by string) error {
		for _, p := range already {
			dec := Session
			if p.by == "allowlist" {
				dec = Always
			}
			record(p.rule.Description, dec, p.by)
		}
		for _, r := range pending {
			record(r.Description, decision, by)
		}
		return nil
	}
	var names, ids []string
	for _, r := range pending {
		names = append(names, r.Description)
		ids = append(ids, r.ID)
	}
	flagged := strings.Join(names, " and ")
	switch {
	case len(pending) == 0:
		return run("", "")
	case env.Yolo:
		return run(Once, "yolo")
	}
	nobody := func() error {
		for _, r := range pending {
			record(r.Description, Deny, "timeout")
		}
		return fmt.Errorf("denied: %q needs approval (%s) and nobody can be asked; run with --yolo or allow its rule for good (hermes approvals add RULE, or command_allowlist in config.yaml; rule: %s)",
			command, flagged, strings.Join(ids, ", "))
	}
	if env.Asker == nil {
		return nobody()
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
	if errors.Is(err, tool.ErrNoAsker) {
		// The asker knows at once that no answer can come (a script's
		// standard input ended): the model hears that, not a timeout.
		return nobody()
	}
	if err != nil {
		for _, r := range pending {
			record(r.Description, Deny, "timeout")
		}
		return fmt.Errorf("denied: no approval for %q (%s) within %s", command, flagged, timeout)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case Once, "o", "y", "yes":
		return run(Once, "user")
	case Session, "s":
		approved.mu.Lock()
		for _, r := range pending {
			approved.m[r.ID] = true
		}
		approved.mu.Unlock()
		return run(Session, "user")
	case Always, "a":
		if a.Allow != nil {
			g, granter := a.Allow.(Granter)
			for _, r := range pending {
				var err error
				if granter {
					err = g.Grant(ctx, r.ID, env.SessionID, command)
				} else {
					err = a.Allow.Add(r.ID)
				}
				if err != nil {
					return fmt.Errorf("approved, but the allow-list could not be saved: %v", err)
				}
			}
		}
		return run(Always, "user")
	}
	for _, r := range pending {
		record(r.Description, Deny, "user")
	}
	return fmt.Errorf("denied by the user: %q (%s); do not retry it, ask the user or find another way", command, flagged)
}
