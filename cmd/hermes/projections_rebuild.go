package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/search"
)

// projectionsRebuildOptions are the flags and arguments of `hermes projections rebuild`.
type projectionsRebuildOptions struct {
	app   *app.Factory
	io    app.IOStreams
	names []string
}

// projectionsRebuildCmd is `hermes projections rebuild`.
func projectionsRebuildCmd(g *app.Factory) *cobra.Command {
	opts := &projectionsRebuildOptions{app: g}
	rebuild := &cobra.Command{
		Use:   "rebuild [NAME]",
		Short: "Drop a projection (all, the search index included, when no name is given; search: the index alone) and rebuild it from the events",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.names = args[0:]
			return runProjectionsRebuild(cmd.Context(), opts)
		},
	}
	return rebuild
}

// runProjectionsRebuild runs `hermes projections rebuild`.
func runProjectionsRebuild(ctx context.Context, opts *projectionsRebuildOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	name := ""
	if len(opts.names) == 1 {
		name = opts.names[0]
	}
	start := time.Now()
	if name != "search" {
		if err := a.Runner.Rebuild(ctx, name); err != nil {
			return err
		}
	}
	if name == "" || name == "search" {
		// The search index is rebuilt as hermes search --rebuild does.
		if err := a.SearchIndex(ctx, true, nil, func(*search.Index) error { return nil }); err != nil {
			return err
		}
	}
	head, _ := a.Store.Head(ctx)
	what := name
	if what == "" {
		what = "all projections"
	}
	fmt.Fprintf(opts.io.Out, "rebuilt %s up to position %d in %s\n", what, head, time.Since(start).Round(time.Millisecond))
	return nil
}
