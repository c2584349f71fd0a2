package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsCmd shows and changes the standing approvals: the grants in the
// event store ("always" answers) and, read-only, config.yaml's
// command_allowlist.
func approvalsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: `Standing approvals of dangerous commands ("always" answers): list, add, revoke`}
	cmd.AddCommand(approvalsListCmd(g), approvalsAddCmd(g), approvalsRevokeCmd(g), approvalsRulesCmd(g))
	return cmd
}

// ruleDescription is the description of the rule key names, "" for an
// MCP tool and a note for a key that names no rule.
func ruleDescription(key string) string {
	if r, ok := judge.Lookup(key); ok {
		return r.Description
	}
	if strings.HasPrefix(key, "mcp_") {
		return ""
	}
	return "(no such rule: allows nothing)"
}

// grantable refuses a pattern no question ever names: a typo would be a
// grant that allows nothing, and a hard-line rule is never allowed.
func grantable(p string) error {
	if strings.HasPrefix(p, "mcp_") && len(p) > len("mcp_") {
		return nil
	}
	r, ok := judge.Lookup(p)
	if !ok {
		return fmt.Errorf("no rule is named %q: give a rule's ID (hermes approvals rules lists them, such as recursive-delete) or its description as an approval question names it (\"recursive delete\"), or an MCP tool (mcp_SERVER_TOOL, mcp_SERVER_*)", p)
	}
	if r.Hard {
		return fmt.Errorf("%q is the hard-line rule %s (%s): it is never allowed, not even with a grant", p, r.ID, r.Description)
	}
	return nil
}

// withGrants opens the home's allow-list for fn.
func withGrants(g *app.Factory, fn func(l *grants.List) error) error {
	a, err := g.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	fileCfg, err := g.Config()
	if err != nil {
		return err
	}
	return fn(grants.New(a.Store, fileCfg.CommandAllowlist, g.Log))
}
