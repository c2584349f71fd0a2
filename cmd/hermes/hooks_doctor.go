package main

import (
	"context"
	"fmt"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// hooksDoctorOptions are the flags of `hermes hooks doctor`.
type hooksDoctorOptions struct {
	app *app.Factory
	io  app.IOStreams
}

func hooksDoctorCmd(g *app.Factory) *cobra.Command {
	opts := &hooksDoctorOptions{app: g}
	return &cobra.Command{
		Use: "doctor", Short: "Check every configured hook: its script, its approval (and whether the script changed since), and one firing with a sample payload", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runHooksDoctor(cmd.Context(), opts)
		},
	}
}

// runHooksDoctor runs `hermes hooks doctor`; it exits 1 when a hook has
// a problem.
func runHooksDoctor(ctx context.Context, opts *hooksDoctorOptions) error {
	_, c, consent, err := hooksSetup(opts.app)
	if err != nil {
		return err
	}
	out := opts.io.Out
	wd, _ := os.Getwd()
	problems, n := 0, 0
	for _, e := range hooks.Events {
		for _, h := range c.Hooks[e] {
			n++
			fmt.Fprintf(out, "%s → %s\n", e, h.Command)
			bad := func(format string, a ...any) {
				problems++
				fmt.Fprintf(out, "    ✗ "+format+"\n", a...)
			}
			if ok, why := hooks.Fired(e); !ok {
				bad("never fired by this build: %s", why)
			}
			if p := hooks.ScriptProblem(h.Command); p != "" {
				bad("%s", p)
				continue
			}
			if a, ok := consent.Approved(e, h.Command); !ok {
				bad("not allowed yet: a chat on a terminal asks; or run with --accept-hooks, HERMES_ACCEPT_HOOKS=1 or hooks_auto_accept: true")
			} else if now := hooks.ScriptMTime(h.Command); now != nil && a.ScriptMTime != nil && *now != *a.ScriptMTime {
				bad("the script changed since it was allowed (%s, now %s): check it, then `hermes hooks revoke` and allow it again", *a.ScriptMTime, *now)
			} else {
				fmt.Fprintf(out, "    ✓ allowed %s\n", a.ApprovedAt)
			}
			one, _ := hooks.New(hooks.Config{e: {h}}, hooks.Options{Dir: wd, Log: zerolog.Nop()})
			tool := ""
			if e == hooks.PreToolCall || e == hooks.PostToolCall {
				tool = "terminal"
				if h.Matcher != "" {
					tool = ""
				}
			}
			for _, x := range one.Test(ctx, e, tool, samplePayloads[e]) {
				if x.Err != nil {
					bad("a sample firing failed: %v", x.Err)
				} else {
					fmt.Fprintf(out, "    ✓ a sample firing answered in %s (decision: %s)\n", x.Duration.Round(1e6), x.Decision)
				}
			}
		}
	}
	if n == 0 {
		fmt.Fprintln(out, "No hooks configured.")
		return nil
	}
	if problems > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d problems in %d hooks", problems, n)}
	}
	fmt.Fprintf(out, "%d hooks, no problems.\n", n)
	return nil
}
