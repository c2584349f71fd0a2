package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// hooksListOptions are the flags of `hermes hooks list`.
type hooksListOptions struct {
	app *app.Factory
	io  app.IOStreams
}

func hooksListCmd(g *app.Factory) *cobra.Command {
	opts := &hooksListOptions{app: g}
	return &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the configured hooks by event: matcher, timeout, whether allowed, whether this build fires the event", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runHooksList(opts)
		},
	}
}

// runHooksList runs `hermes hooks list`.
func runHooksList(opts *hooksListOptions) error {
	_, c, consent, err := hooksSetup(opts.app)
	if err != nil {
		return err
	}
	out := opts.io.Out
	n := 0
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT\tCOMMAND\tMATCHER\tTIMEOUT\tSTATE")
	for _, e := range hooks.Events {
		for _, h := range c.Hooks[e] {
			n++
			state := "not allowed yet (asked on a terminal; or --accept-hooks)"
			if a, ok := consent.Approved(e, h.Command); ok {
				state = "allowed " + a.ApprovedAt
				if now := hooks.ScriptMTime(h.Command); now != nil && a.ScriptMTime != nil && *now != *a.ScriptMTime {
					state += " (script changed since: hermes hooks doctor)"
				}
			}
			if ok, why := hooks.Fired(e); !ok {
				state = "never fired: " + why
			}
			timeout := h.Timeout
			if timeout <= 0 {
				timeout = int(hooks.DefaultTimeout.Seconds())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%ds\t%s\n", e, h.Command, dash(h.Matcher), timeout, state)
		}
	}
	if n == 0 {
		fmt.Fprintln(out, "No hooks configured: add them under hooks: in config.yaml (see the README's Hooks section).")
		return nil
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
