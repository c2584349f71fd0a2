package terminal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// Rule is one kind of command that needs a decision. Description is shown
// to the user and is the key of the allow-list (command_allowlist) and of
// ApprovalDecided events, so it is short and stays stable. Hard rules are
// refused even with --yolo or an allow-list entry.
type Rule struct {
	Description string
	Hard        bool
}

// The hard-line rules: every spelling of these is refused.
var (
	ruleRootDelete      = &Rule{"delete of the root or a system directory", true}
	ruleMkfs            = &Rule{"format a filesystem (mkfs)", true}
	ruleDD              = &Rule{"dd onto a disk device", true}
	ruleDisk            = &Rule{"write over a disk device", true}
	ruleForkBomb        = &Rule{"fork bomb", true}
	ruleKillAll         = &Rule{"kill every process (kill -1)", true}
	ruleShutdown        = &Rule{"shut down or reboot the machine", true}
	ruleInit            = &Rule{"shut down or reboot the machine (init)", true}
	ruleChmodSystem     = &Rule{"recursive chmod or chown of the root or a system directory", true}
	ruleAccounts        = &Rule{"overwrite /etc/passwd, /etc/shadow or /etc/sudoers", true}
	ruleAgentHomeDelete = &Rule{"delete the agent's home ($HERMES_HOME)", true}
)

// The rules that ask.
var (
	ruleRecursiveDelete = &Rule{Description: "recursive delete"}
	ruleDownloadShell   = &Rule{Description: "pipe a download into a shell"}
	rulePipeShell       = &Rule{Description: "pipe into a shell"}
	ruleGenerated       = &Rule{Description: "run generated code"}
	ruleDynamic         = &Rule{Description: "dynamic command name"}
	ruleInline          = &Rule{Description: "inline script that runs commands"}
	ruleUnparsable      = &Rule{Description: "command that could not be parsed"}
	ruleDeleteFrom      = &Rule{Description: "DELETE without WHERE"}
	ruleDrop            = &Rule{Description: "DROP TABLE / DATABASE"}
	ruleTruncate        = &Rule{Description: "TRUNCATE a table"}
	ruleChmod777R       = &Rule{Description: "chmod -R 777"}
	ruleChmod777        = &Rule{Description: "chmod 777"}
	ruleChmodR          = &Rule{Description: "recursive chmod"}
	ruleSetuid          = &Rule{Description: "chmod setuid"}
	ruleChownR          = &Rule{Description: "recursive chown"}
	ruleChmodSystemDir  = &Rule{Description: "chmod or chown of a system directory"}
	ruleGitForce        = &Rule{Description: "git push --force"}
	ruleGitReset        = &Rule{Description: "git reset --hard"}
	ruleGitClean        = &Rule{Description: "git clean -f"}
	ruleFindDelete      = &Rule{Description: "find -delete"}
	ruleFindRm          = &Rule{Description: "find -exec rm"}
	ruleXargsRm         = &Rule{Description: "xargs rm"}
	ruleServiceStop     = &Rule{Description: "stop or disable a service"}
	ruleService         = &Rule{Description: "stop a service"}
	rulePkill           = &Rule{Description: "kill processes by name"}
	ruleKill9           = &Rule{Description: "kill -9"}
	ruleEtc             = &Rule{Description: "overwrite a file in /etc"}
	ruleDevNull         = &Rule{Description: "move into /dev/null"}
	ruleDocker          = &Rule{Description: "remove docker resources"}
	ruleSSH             = &Rule{Description: "write to ~/.ssh"}
	ruleStartup         = &Rule{Description: "write to a shell startup file"}
	ruleHistory         = &Rule{Description: "erase shell history"}
	ruleCrontab         = &Rule{Description: "edit a crontab"}
	ruleCrontabRemove   = &Rule{Description: "remove the crontab"}
	ruleBoot            = &Rule{Description: "write to /boot"}
	ruleKernel          = &Rule{Description: "write to kernel settings (/proc, /sys)"}
	ruleSystemWrite     = &Rule{Description: "write into a system directory"}
	ruleAgentHomeWrite  = &Rule{Description: "write to the agent's home ($HERMES_HOME)"}
	ruleReverseShell    = &Rule{Description: "reverse shell"}
	ruleDevice          = &Rule{Description: "write to a device"}
	ruleSecretRead      = &Rule{Description: "read a private key or password file"}
	ruleDiskTool        = &Rule{Description: "partition or wipe a disk"}
)

// Rules lists every rule the judge reports, hard-line ones first.
func Rules() []*Rule {
	return []*Rule{ruleRootDelete, ruleMkfs, ruleDD, ruleDisk, ruleForkBomb, ruleKillAll, ruleShutdown, ruleInit,
		ruleChmodSystem, ruleAccounts, ruleAgentHomeDelete,
		ruleRecursiveDelete, ruleDownloadShell, rulePipeShell, ruleGenerated, ruleDynamic, ruleInline, ruleUnparsable,
		ruleDeleteFrom, ruleDrop, ruleTruncate, ruleChmod777R, ruleChmod777, ruleChmodR, ruleSetuid, ruleChownR,
		ruleChmodSystemDir, ruleGitForce, ruleGitReset, ruleGitClean, ruleFindDelete, ruleFindRm, ruleXargsRm,
		ruleServiceStop, ruleService, rulePkill, ruleKill9, ruleEtc, ruleDevNull, ruleDocker, ruleSSH, ruleStartup,
		ruleHistory, ruleCrontab, ruleCrontabRemove, ruleBoot, ruleKernel, ruleSystemWrite, ruleAgentHomeWrite,
		ruleReverseShell, ruleDevice, ruleSecretRead, ruleDiskTool}
}

// Check judges command for the current user and returns its first
// hard-line finding and its first finding that needs approval (either may
// be nil). Approver.Approve looks at every finding, not just these two.
func Check(command string) (hard, danger *Rule) {
	for _, f := range DefaultJudge().Findings(command) {
		switch {
		case f.Rule.Hard && hard == nil:
			hard = f.Rule
		case !f.Rule.Hard && danger == nil:
			danger = f.Rule
		}
	}
	return hard, danger
}

// CheckDescriptions is Check for a caller that knows rules by their
// descriptions (the cron scheduler's Rules.Judge, which cmd/hermes wires to
// it): "" where Check found no rule.
func CheckDescriptions(command string) (hard, danger string) {
	h, d := Check(command)
	if h != nil {
		hard = h.Description
	}
	if d != nil {
		danger = d.Description
	}
	return hard, danger
}

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
	Judge Judge
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
