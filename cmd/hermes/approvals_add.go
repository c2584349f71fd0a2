package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsAddCmd is `hermes approvals add`.
func approvalsAddCmd(g *app.Factory) *cobra.Command {
	add := &cobra.Command{
		Use:   "add RULE",
		Short: `Grant a rule for good, by its ID ("recursive-delete") or as a question names it ("recursive delete"), or an MCP tool (mcp_SERVER_TOOL, mcp_SERVER_*)`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := strings.TrimSpace(args[0])
			if err := grantable(p); err != nil {
				return err
			}
			p = judge.Key(p)
			return withGrants(g, func(l *grants.List) error {
				if err := l.Put(cmd.Context(), grants.Grant{Pattern: p, By: grants.ByCLI}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "granted: %s\n", p)
				return nil
			})
		},
	}
	return add
}
