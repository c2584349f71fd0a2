package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/search"
)

// projectionsRebuildCmd is `hermes projections rebuild`.
func projectionsRebuildCmd(g *app.Factory) *cobra.Command {
	rebuild := &cobra.Command{
		Use:   "rebuild [NAME]",
		Short: "Drop a projection (all, the search index included, when no name is given; search: the index alone) and rebuild it from the events",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			start := time.Now()
			if name != "search" {
				if err := a.Runner.Rebuild(cmd.Context(), name); err != nil {
					return err
				}
			}
			if name == "" || name == "search" {
				// The search index is rebuilt as hermes search --rebuild does.
				if err := a.SearchIndex(cmd.Context(), true, nil, func(*search.Index) error { return nil }); err != nil {
					return err
				}
			}
			head, _ := a.Store.Head(cmd.Context())
			what := name
			if what == "" {
				what = "all projections"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rebuilt %s up to position %d in %s\n", what, head, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	return rebuild
}
