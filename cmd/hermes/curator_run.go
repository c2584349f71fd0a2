package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// curatorRunOptions are the flags of `hermes curator run`.
type curatorRunOptions struct {
	app         *app.Factory
	io          app.IOStreams
	flags       curatorFlags
	yes, dryRun bool
}

// curatorRunCmd is `hermes curator run`.
func curatorRunCmd(g *app.Factory) *cobra.Command {
	opts := &curatorRunOptions{app: g}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Survey the skills and archive duplicates, near-duplicates and long-unused ones, after asking (--yes: without); each archive is an event, undone by hermes skills rollback",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runCuratorRun(cmd.Context(), opts)
		},
	}
	opts.flags.register(cmd)
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "archive what is proposed without asking")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "only say what would be archived")
	return cmd
}

// runCuratorRun runs `hermes curator run`.
func runCuratorRun(ctx context.Context, opts *curatorRunOptions) error {
	cfg, err := opts.flags.config()
	if err != nil {
		return err
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	return runCurator(ctx, a, opts.io, cfg, opts.yes, opts.dryRun)
}
