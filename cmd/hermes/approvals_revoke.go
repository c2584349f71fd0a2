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

// approvalsRevokeOptions are the flags and arguments of `hermes approvals revoke`.
type approvalsRevokeOptions struct {
	app    *app.Factory
	io     app.IOStreams
	rule   string
	reason string
}

// approvalsRevokeCmd is `hermes approvals revoke`.
func approvalsRevokeCmd(g *app.Factory) *cobra.Command {
	opts := &approvalsRevokeOptions{app: g}
	revoke := &cobra.Command{
		Use:   "revoke RULE",
		Short: "Take a grant back (the rule by its ID or description): commands it allowed are asked about again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.rule = args[0]
			return runApprovalsRevoke(cmd.Context(), opts)
		},
	}
	revoke.Flags().StringVar(&opts.reason, "reason", "", "why, kept with the revocation")
	return revoke
}

// runApprovalsRevoke runs `hermes approvals revoke`.
func runApprovalsRevoke(ctx context.Context, opts *approvalsRevokeOptions) error {
	p := judge.Key(strings.TrimSpace(opts.rule))
	return withGrants(opts.app, func(l *grants.List) error {
		if err := l.Revoke(ctx, p, grants.ByCLI, opts.reason); err != nil {
			return err
		}
		fmt.Fprintf(opts.io.Out, "revoked: %s\n", p)
		return nil
	})
}
