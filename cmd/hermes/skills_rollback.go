package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsRollbackOptions are the flags and arguments of `hermes skills rollback`.
type skillsRollbackOptions struct {
	app     *app.Factory
	io      app.IOStreams
	name    string
	version int
}

// skillsRollbackCmd is `hermes skills rollback`.
func skillsRollbackCmd(g *app.Factory) *cobra.Command {
	opts := &skillsRollbackOptions{app: g}
	return &cobra.Command{
		Use:   "rollback NAME [VERSION]",
		Short: "Make a skill what it was at VERSION (default: the version before the current one), as a new version: history is kept",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name, opts.version = args[0], 0
			if len(args) == 2 {
				n, err := parseVersion(args[1])
				if err != nil {
					return err
				}
				opts.version = n
			}
			return runSkillsRollback(cmd.Context(), opts)
		},
	}
}

// runSkillsRollback runs `hermes skills rollback`.
func runSkillsRollback(ctx context.Context, opts *skillsRollbackOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	v, err := skillsKeeper(a).Rollback(ctx, opts.name, opts.version, person())
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "skill %s: version %d (%s)\n", opts.name, v.Number, v.Reason)
	return nil
}
