package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// memoryStatusOptions are the flags of `hermes memory status`.
type memoryStatusOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// memoryStatusCmd is `hermes memory status`.
func memoryStatusCmd(g *app.Factory) *cobra.Command {
	opts := &memoryStatusOptions{app: g}
	return &cobra.Command{
		Use:   "status",
		Short: "Whether memory is on, the review gate, what MEMORY.md and USER.md hold, and the changes waiting for review",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runMemoryStatus(cmd.Context(), opts)
		},
	}
}

// runMemoryStatus runs `hermes memory status`.
func runMemoryStatus(ctx context.Context, opts *memoryStatusOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	text, err := memoryStatus(ctx, a.Home, a.Store)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.io.Out, text)
	return err
}
