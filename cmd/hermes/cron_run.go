package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// cronRunCmd is `hermes cron run`.
func cronRunCmd(g *app.Factory) *cobra.Command {
	var ov config.Overrides
	runCmd := &cobra.Command{Use: "run ID", Short: "Run a job now, in this process (its answer is delivered as usual)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newChatter(g, ov, nil)
			if err != nil {
				return err
			}
			defer c.stop()
			ctx, done := interruptible(cmd.Context())
			defer done()
			run, err := c.scheduler(nil, nil).RunNow(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "run %s: %s", run.ID, run.Status)
			if run.CostUSD > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), ", $%.4f", run.CostUSD)
			}
			if run.SessionID != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), ", session %s", run.SessionID)
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			if d := run.Deliveries(); d != "" && d != "-" {
				fmt.Fprintln(cmd.ErrOrStderr(), "delivered:", d)
			}
			if run.Error != "" {
				return &exitError{code: 1, err: fmt.Errorf("the run %s: %s", run.Status, run.Error)}
			}
			return nil
		}}
	modelFlags(runCmd, &ov)
	return runCmd
}

// modelFlags are the flags of cron run and cron daemon that choose the
// model.
func modelFlags(c *cobra.Command, ov *config.Overrides) {
	c.Flags().StringVar(&ov.Model, "model", "", "model name")
	c.Flags().StringVar(&ov.Provider, "provider", "", "provider name")
	c.Flags().StringVar(&ov.BaseURL, "base-url", "", "API base URL")
	c.Flags().StringVar(&ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
}
