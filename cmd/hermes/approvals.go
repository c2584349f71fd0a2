package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// approvalsCmd shows and changes the standing approvals: the grants in the
// event store ("always" answers) and, read-only, config.yaml's
// command_allowlist.
func approvalsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: `Standing approvals of dangerous commands ("always" answers): list, add, revoke`}
	// with opens the home's allow-list for fn.
	with := func(fn func(l *grants.List) error) error {
		a, err := g.Open()
		if err != nil {
			return err
		}
		defer a.Close()
		fileCfg, err := config.Load(a.Home)
		if err != nil {
			return err
		}
		return fn(grants.New(a.Store, fileCfg.CommandAllowlist, g.Log))
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
				fmt.Fprintln(w, "RULE\tBY\tSINCE\tSESSION\tDESCRIPTION\tCOMMAND")
				for _, gr := range gs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", gr.Pattern, gr.By, gr.At.Local().Format(time.DateTime), short(gr.Session), ruleDescription(gr.Pattern), clip(gr.Command, 60))
				}
				for _, p := range l.Config() {
					fmt.Fprintf(w, "%s\tconfig.yaml\t\t\t%s\t\n", judge.Key(p), ruleDescription(p))
				}
				return w.Flush()
			})
		},
	}
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
		Use:   "revoke RULE",
		Short: "Take a grant back (the rule by its ID or description): commands it allowed are asked about again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := judge.Key(strings.TrimSpace(args[0]))
			return with(func(l *grants.List) error {
				if err := l.Revoke(cmd.Context(), p, grants.ByCLI, reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked: %s\n", p)
				return nil
			})
		},
	}
	revoke.Flags().StringVar(&reason, "reason", "", "why, kept with the revocation")
	rules := &cobra.Command{
		Use:   "rules",
		Short: "The judge's rules of dangerous commands: ID (what add and command_allowlist take), level, description",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(w, "RULE\tLEVEL\tDESCRIPTION")
			for _, r := range judge.Rules() {
				level := "ask"
				if r.Hard {
					level = "refuse"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, level, r.Description)
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(list, add, revoke, rules)
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
