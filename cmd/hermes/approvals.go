package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
)

// approvalsCmd shows and changes the standing approvals: the grants in the
// event store ("always" answers) and, read-only, config.yaml's
// command_allowlist.
func approvalsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: `Standing approvals of dangerous commands ("always" answers): list, add, revoke`}
	// with opens the home's allow-list for fn.
	with := func(fn func(l *grants.List) error) error {
		a, err := g.open()
		if err != nil {
			return err
		}
		defer a.Close()
		fileCfg, err := loadConfig(a.home)
		if err != nil {
			return err
		}
		return fn(grants.New(a.store, fileCfg.CommandAllowlist, g.log))
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Grants in force, and the entries of command_allowlist in config.yaml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return with(func(l *grants.List) error {
				gs, err := l.Grants(cmd.Context())
				if err != nil {
					return err
				}
				if len(gs) == 0 && len(l.Config()) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), `no standing approvals (answer "always" to a question, or hermes approvals add PATTERN)`)
					return nil
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
				fmt.Fprintln(w, "PATTERN\tBY\tSINCE\tSESSION\tCOMMAND")
				for _, gr := range gs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", gr.Pattern, gr.By, gr.At.Local().Format(time.DateTime), short(gr.Session), clip(gr.Command, 60))
				}
				for _, p := range l.Config() {
					fmt.Fprintf(w, "%s\tconfig.yaml\t\t\t\n", p)
				}
				return w.Flush()
			})
		},
	}
	add := &cobra.Command{
		Use:   "add PATTERN",
		Short: `Grant a pattern for good: a rule as a question names it ("recursive delete") or an MCP tool (mcp_SERVER_TOOL, mcp_SERVER_*)`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := strings.TrimSpace(args[0])
			if err := grantable(p); err != nil {
				return err
			}
			return with(func(l *grants.List) error {
				if err := l.Put(cmd.Context(), grants.Grant{Pattern: p, By: grants.ByCLI}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "granted: %s\n", p)
				return nil
			})
		},
	}
	var reason string
	revoke := &cobra.Command{
		Use:   "revoke PATTERN",
		Short: "Take a grant back: commands it allowed are asked about again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(func(l *grants.List) error {
				if err := l.Revoke(cmd.Context(), args[0], grants.ByCLI, reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked: %s\n", args[0])
				return nil
			})
		},
	}
	revoke.Flags().StringVar(&reason, "reason", "", "why, kept with the revocation")
	cmd.AddCommand(list, add, revoke)
	return cmd
}

// grantable refuses a pattern no question ever names: a typo would be a
// grant that allows nothing, and a hard-line rule is never allowed.
func grantable(p string) error {
	if strings.HasPrefix(p, "mcp_") && len(p) > len("mcp_") {
		return nil
	}
	for _, r := range judge.Rules() {
		if r.Description != p {
			continue
		}
		if r.Hard {
			return fmt.Errorf("%q is a hard-line rule: it is never allowed, not even with a grant", p)
		}
		return nil
	}
	return fmt.Errorf("no rule is named %q: give a rule as an approval question names it (such as \"recursive delete\"), or an MCP tool (mcp_SERVER_TOOL, mcp_SERVER_*)", p)
}
