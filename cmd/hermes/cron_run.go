package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// cronRunOptions are the flags and arguments of `hermes cron run`.
type cronRunOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
	ov  config.Overrides
}

// cronRunCmd is `hermes cron run`.
func cronRunCmd(g *app.Factory) *cobra.Command {
	opts := &cronRunOptions{app: g}
	runCmd := &cobra.Command{Use: "run ID", Short: "Run a job now, in this process (its answer is delivered as usual)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronRun(cmd.Context(), opts)
		},
	}
	modelFlags(runCmd, &opts.ov)
	return runCmd
}

// runCronRun runs `hermes cron run`.
func runCronRun(ctx context.Context, opts *cronRunOptions) error {
	c, err := newChatter(opts.app, opts.ov, nil)
	if err != nil {
		return err
	}
	defer c.Stop()
	ctx, done := interruptible(ctx)
	defer done()
	run, err := c.scheduler(nil, nil).RunNow(ctx, opts.id)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.ErrOut, "run %s: %s", run.ID, run.Status)
	if run.CostUSD > 0 {
		fmt.Fprintf(opts.io.ErrOut, ", $%.4f", run.CostUSD)
	}
	if run.SessionID != "" {
		fmt.Fprintf(opts.io.ErrOut, ", session %s", run.SessionID)
	}
	fmt.Fprintln(opts.io.ErrOut)
	if d := run.Deliveries(); d != "" && d != "-" {
		fmt.Fprintln(opts.io.ErrOut, "delivered:", d)
	}
	if run.Error != "" {
		return &exitError{code: 1, err: fmt.Errorf("the run %s: %s", run.Status, run.Error)}
	}
	return nil
}

// modelFlags are the flags of cron run and cron daemon that choose the
// model.
func modelFlags(c *cobra.Command, ov *config.Overrides) {
	c.Flags().StringVarP(&ov.Model, "model", "m", "", "model name")
	c.Flags().StringVar(&ov.Provider, "provider", "", "provider name")
	c.Flags().StringVar(&ov.BaseURL, "base-url", "", "API base URL")
	c.Flags().StringVar(&ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
}
