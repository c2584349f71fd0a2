package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func projectionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "projections", Short: "Inspect and rebuild the read models derived from events"}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each projection's checkpoint against the end of the log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open()
			if err != nil {
				return err
			}
			defer a.Close()
			st, err := a.runner.Status(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECTION\tCHECKPOINT\tHEAD\tBEHIND")
			for _, s := range st {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", s.Name, s.Checkpoint, s.Head, s.Behind)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			ds, err := a.runner.Damaged(cmd.Context())
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
		Short: "Drop a projection (all when no name is given) and rebuild it from the events",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open()
			if err != nil {
				return err
			}
			defer a.Close()
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			start := time.Now()
			if err := a.runner.Rebuild(cmd.Context(), name); err != nil {
				return err
			}
			head, _ := a.store.Head(cmd.Context())
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
