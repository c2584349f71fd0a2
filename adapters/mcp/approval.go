package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// Decisions a person can take on a tool that needs approval (the
// terminal's, for the same question).
const (
	once    = "once"
	session = "session"
	always  = "always"
	deny    = "deny"
)

// granter is an AllowList that keeps where a grant came from (the
// session and the call the person was asked about).
type granter interface {
	Grant(ctx context.Context, pattern, session, command string) error
}

type approvals struct {
	mu sync.Mutex
	m  map[string]bool
}

// approve asks the person before a tool of an approval: true server runs,
// as the terminal does for dangerous commands: approved for the session,
// in command_allowlist (the tool's name, or mcp_<server>_* for all of a
// server's), --yolo, or asked. Every decision is an ApprovalDecided event.
func (s *Server) approve(ctx context.Context, name string, args json.RawMessage) error {
	env := tool.EnvFrom(ctx)
	command := strings.TrimSpace(name + " " + clip(string(args), 500))
	record := func(decision, by string) {
		if env.Record != nil {
			env.Record(ctx, schema.ApprovalDecided{Command: command, Pattern: name, Decision: decision, By: by})
		}
	}
	all := "mcp_" + safeName(s.name, 1<<10) + "_*"
	approved := env.Values.Get("mcp.approvals", func() any { return &approvals{m: map[string]bool{}} }).(*approvals)
	approved.mu.Lock()
	ok := approved.m[name]
	approved.mu.Unlock()
	switch {
	case ok:
		record(session, "session")
		return nil
	case s.opts.Allow != nil && (s.opts.Allow.Has(name) || s.opts.Allow.Has(all)):
		record(always, "allowlist")
		return nil
	case env.Yolo:
		record(once, "yolo")
		return nil
	case env.Asker == nil:
		record(deny, "timeout")
		return fmt.Errorf("denied: %s needs approval (mcp_servers.%s.approval) and nobody can be asked; run with --yolo or add %s to command_allowlist", name, s.name, name)
	}
	timeout := s.opts.ApprovalTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answer, err := env.Asker.Ask(actx, tool.Question{Kind: tool.QuestionApproval, Timeout: timeout,
		Text:    fmt.Sprintf("The agent wants to call %s, a tool of MCP server %s (mcp_servers.%s.approval is on), with:\n  %s\nAllow it?", name, s.name, s.name, clip(string(args), 500)),
		Choices: []string{once, session, always, deny}})
	if err != nil {
		record(deny, "timeout")
		return fmt.Errorf("denied: no approval for %s within %s", name, timeout)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case once, "o", "y", "yes":
		record(once, "user")
		return nil
	case session, "s":
		approved.mu.Lock()
		approved.m[name] = true
		approved.mu.Unlock()
		record(session, "user")
		return nil
	case always, "a":
		if s.opts.Allow != nil {
			var err error
			if g, ok := s.opts.Allow.(granter); ok {
				err = g.Grant(ctx, name, env.SessionID, command)
			} else {
				err = s.opts.Allow.Add(name)
			}
			if err != nil {
				return fmt.Errorf("approved, but the allow-list could not be saved: %v", err)
			}
		}
		record(always, "user")
		return nil
	}
	record(deny, "user")
	return fmt.Errorf("denied by the user: %s; do not retry it, ask the user or find another way", name)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
