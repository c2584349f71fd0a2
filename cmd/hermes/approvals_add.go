package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// approvalsAddOptions are the flags and arguments of `hermes approvals add`.
type approvalsAddOptions struct {
	app  *app.Factory
	io   app.IOStreams
	rule string
}

// approvalsAddCmd is `hermes approvals add`.
func approvalsAddCmd(g *app.Factory) *cobra.Command {
	opts := &approvalsAddOptions{app: g}
	add := &cobra.Command{
		Use:   "add RULE",
		Short: `Grant a rule for good, by its ID ("recursive-delete") or as a question names it ("recursive delete"), or an MCP tool (mcp_SERVER_TOOL, mcp_SERVER_*)`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.rule = args[0]
			return runApprovalsAdd(cmd.Context(), opts)
		},
	}
	return add
}

// runApprovalsAdd runs `hermes approvals add`.
func runApprovalsAdd(ctx context.Context, opts *approvalsAddOptions) error {
	p := strings.TrimSpace(opts.rule)
	if err := grantable(p); err != nil {
		return err
	}
	p = judge.Key(p)
	return withGrants(opts.app, func(l *grants.List) error {
		if err := l.Put(ctx, grants.Grant{Pattern: p, By: grants.ByCLI}); err != nil {
			return err
		}
		fmt.Fprintf(opts.io.Out, "granted: %s\n", p)
		return nil
	})
}
