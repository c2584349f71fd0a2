package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// reviewUndoOptions are the arguments of `hermes review undo`.
type reviewUndoOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
}

// reviewUndoCmd is `hermes review undo`.
func reviewUndoCmd(g *app.Factory) *cobra.Command {
	opts := &reviewUndoOptions{app: g}
	return &cobra.Command{
		Use:   "undo ID",
		Short: "Take back what a background review learned: its skills rolled back or archived, its memory entries removed (as new events: history is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.id = ioOf(cmd), args[0]
			return runReviewUndo(cmd.Context(), opts)
		},
	}
}

// runReviewUndo runs `hermes review undo`.
func runReviewUndo(ctx context.Context, opts *reviewUndoOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	e, err := findReview(ctx, a.Store, opts.id)
	if err != nil {
		return err
	}
	res, err := undoReview(ctx, a, e, person(), "cli")
	if err != nil {
		return err
	}
	if len(res.Undone) == 0 && len(res.Skipped) == 0 {
		fmt.Fprintf(opts.io.Out, "review %s changed nothing: nothing to undo\n", short(e.ReviewID))
	}
	for _, s := range res.Undone {
		fmt.Fprintf(opts.io.Out, "undone: %s\n", s)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(opts.io.Out, "left as it is: %s\n", s)
	}
	return nil
}
