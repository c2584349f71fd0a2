package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/search"
)

func projectionsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "projections", Short: "Inspect and rebuild the read models derived from events"}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each projection's checkpoint against the end of the log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			st, err := a.Runner.Status(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECTION\tCHECKPOINT\tHEAD\tBEHIND")
			for _, s := range st {
				note := ""
				if s.FedBy != "" {
					note = "\tfed by " + s.FedBy
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d%s\n", s.Name, s.Checkpoint, s.Head, s.Behind, note)
			}
			// The search index lives in its own files (search.bleve).
			head, _ := a.Store.Head(cmd.Context())
			path := filepath.Join(a.Home, "search.bleve")
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(tw, "search\t0\t%d\t%d\t(not built yet: the next hermes search builds it)\n", head, head)
			} else if g.ReadOnlyHome(a.Home) {
				fmt.Fprintf(tw, "search\t-\t%d\t-\t(read-only home: the index is not opened)\n", head)
			} else if idx, err := search.Open(path); err != nil {
				fmt.Fprintf(tw, "search\t-\t%d\t-\t(%v)\n", head, err)
			} else {
				cp, cerr := idx.Checkpoint(cmd.Context())
				idx.Close()
				if cerr != nil {
					return cerr
				}
				fmt.Fprintf(tw, "search\t%d\t%d\t%d\n", cp, head, head-min(cp, head))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			ds, err := a.Runner.Damaged(cmd.Context())
			if err != nil {
				return err
			}
			for _, d := range ds {
				fmt.Fprintf(cmd.OutOrStdout(), "left out, damaged: %s\n", d)
			}
			if len(ds) > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "(`hermes store verify` shows the damage, `hermes store repair --quarantine` moves it aside)")
			}
			return nil
		},
	}
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
	cmd.AddCommand(status, rebuild)
	return cmd
}
