package terminal

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
)

// Rule is one curated pattern of a dangerous command.
type Rule struct {
	Re          *regexp.Regexp
	Description string
}

func rule(re, desc string) Rule { return Rule{regexp.MustCompile(re), desc} }

// systemDirs are directories whose removal is never approved.
const systemDirs = `(/|/\*|~|~/|\$HOME|/bin|/boot|/dev|/etc|/home|/lib|/lib64|/opt|/proc|/root|/sbin|/srv|/sys|/usr|/var)/?`

// Hardline commands are refused even with --yolo.
var Hardline = []Rule{
	rule(`(^|[;&|]\s*|\bsudo\s+)rm\s+(-[a-zA-Z]*\s+|--[a-z-]+\s+)*`+systemDirs+`(\s|$|;|&)`, "delete of the root or a system directory"),
	rule(`\bmkfs(\.[a-z0-9]+)?\b`, "format a filesystem (mkfs)"),
	rule(`\bdd\b[^;|&]*\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk)`, "dd onto a disk device"),
	rule(`>\s*/dev/(sd|hd|vd|nvme)[a-z0-9]*`, "write over a disk device"),
	rule(`:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`, "fork bomb"),
	rule(`\bkill\s+(-[A-Z0-9]+\s+)*-1\b`, "kill every process (kill -1)"),
	rule(`(^|[;&|]\s*|\bsudo\s+)(shutdown|reboot|halt|poweroff)\b`, "shut down or reboot the machine"),
	rule(`(^|[;&|]\s*|\bsudo\s+)init\s+[06]\b`, "shut down or reboot the machine (init)"),
}

// Dangerous commands need approval (or --yolo, or an allow-list entry).
var Dangerous = []Rule{
	rule(`\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b`, "recursive delete"),
	rule(`\b(bash|sh|zsh|dash|ksh)\s+(-[a-z]*\s+)*-[a-z]*c\b`, "shell -c wrapper"),
	rule(`\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`, "pipe a download into a shell"),
	rule(`(?i)\bDELETE\s+FROM\s+[^\s;]+\s*(;|$|"|')`, "DELETE without WHERE"),
	rule(`(?i)\bDROP\s+(TABLE|DATABASE|SCHEMA)\b`, "DROP TABLE / DATABASE"),
	rule(`(?i)\bTRUNCATE\s+(TABLE\s+)?\w`, "TRUNCATE a table"),
	rule(`\bchmod\s+(-[a-zA-Z]*R[a-zA-Z]*\s+)777\b|\bchmod\s+777\s+-R\b`, "chmod -R 777"),
	rule(`\bchown\s+-[a-zA-Z]*R`, "recursive chown"),
	rule(`\bgit\s+push\b.*(\s--force\b|\s-f\b|\s--force-with-lease\b)`, "git push --force"),
	rule(`\bgit\s+reset\s+--hard\b`, "git reset --hard"),
	rule(`\bgit\s+clean\s+-[a-zA-Z]*f`, "git clean -f"),
	rule(`\bfind\b.*\s-delete\b`, "find -delete"),
	rule(`\bfind\b.*-exec\s+rm\b`, "find -exec rm"),
	rule(`\bxargs\s+(-[a-zA-Z0-9]+\s+)*rm\b`, "xargs rm"),
	rule(`\bsystemctl\s+(stop|disable|mask|kill|restart)\b`, "stop or disable a service"),
	rule(`\bservice\s+\S+\s+(stop|restart)\b`, "stop a service"),
	rule(`\b(pkill|killall)\b`, "kill processes by name"),
	rule(`\bkill\s+-9\b`, "kill -9"),
	rule(`>\s*/etc/`, "overwrite a file in /etc"),
	rule(`\bmv\s+.*\s/dev/null\b`, "move into /dev/null"),
	rule(`\bdocker\s+(rm|rmi|system\s+prune|volume\s+rm)\b`, "remove docker resources"),
}

// Check returns the first hard-line and dangerous rules command matches.
func Check(command string) (hard, danger *Rule) {
	c := strings.TrimSpace(command)
	for i := range Hardline {
		if Hardline[i].Re.MatchString(c) {
			return &Hardline[i], nil
		}
	}
	for i := range Dangerous {
		if Dangerous[i].Re.MatchString(c) {
			return nil, &Dangerous[i]
		}
	}
	return nil, nil
}

// AllowList is the config's command_allowlist: rule descriptions the user
// approved for good.
type AllowList interface {
	Has(pattern string) bool
	Add(pattern string) error
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
// reads. Every decision on a flagged command is recorded as an event.
func (a *Approver) Approve(ctx context.Context, command string) error {
	hard, danger := Check(command)
	if hard == nil && danger == nil {
		return nil
	}
	env := agent.EnvFrom(ctx)
	record := func(pattern, decision, by string) {
		if env.Record != nil {
			env.Record(ctx, schema.ApprovalDecided{Command: command, Pattern: pattern, Decision: decision, By: by})
		}
	}
	if hard != nil {
		record(hard.Description, Deny, "hardline")
		return fmt.Errorf("blocked: %q is a %s, which is never allowed, not even with --yolo", command, hard.Description)
	}
	approved := env.Values.Get("terminal.approvals", func() any { return &sessionApprovals{m: map[string]bool{}} }).(*sessionApprovals)
	approved.mu.Lock()
	ok := approved.m[danger.Description]
	approved.mu.Unlock()
	switch {
	case ok:
		record(danger.Description, Session, "session")
		return nil
	case a.Allow != nil && a.Allow.Has(danger.Description):
		record(danger.Description, Always, "allowlist")
		return nil
	case env.Yolo:
		record(danger.Description, Once, "yolo")
		return nil
	case env.Asker == nil:
		record(danger.Description, Deny, "timeout")
		return fmt.Errorf("denied: %q needs approval (%s) and nobody can be asked; run with --yolo or add it to command_allowlist", command, danger.Description)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answer, err := env.Asker.Ask(actx, agent.Question{Kind: "approval", Timeout: timeout,
		Text:    fmt.Sprintf("The agent wants to run a command flagged as %s:\n  %s\nAllow it?", danger.Description, command),
		Choices: []string{Once, Session, Always, Deny}})
	if err != nil {
		record(danger.Description, Deny, "timeout")
		return fmt.Errorf("denied: no approval for %q (%s) within %s", command, danger.Description, timeout)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case Once, "o", "y", "yes":
		record(danger.Description, Once, "user")
		return nil
	case Session, "s":
		approved.mu.Lock()
		approved.m[danger.Description] = true
		approved.mu.Unlock()
		record(danger.Description, Session, "user")
		return nil
	case Always, "a":
		if a.Allow != nil {
			if err := a.Allow.Add(danger.Description); err != nil {
				return fmt.Errorf("approved, but the allow-list could not be saved: %v", err)
			}
		}
		record(danger.Description, Always, "user")
		return nil
	}
	record(danger.Description, Deny, "user")
	return fmt.Errorf("denied by the user: %q (%s); do not retry it, ask the user or find another way", command, danger.Description)
}
