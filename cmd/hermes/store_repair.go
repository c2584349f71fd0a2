package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events/embedded"
)

// storeRepairOptions are the flags and arguments of `hermes store repair`.
type storeRepairOptions struct {
	app                *app.Factory
	io                 app.IOStreams
	quarantine, asJSON bool
}

func storeRepair(g *app.Factory) *cobra.Command {
	opts := &storeRepairOptions{app: g}
	cmd := &cobra.Command{
		Use:   "repair --quarantine",
		Short: "Move damaged sessions out of the event log, into its quarantine table, so that the log reads clean",
		Long: `Verify the event log and move the whole stream of every damaged event
(and events lost outright) into the quarantine table of events.db, leaving
a tombstone so that every read model drops the session. Nothing is deleted:
the rows are kept there exactly as they were. Damage to SQLite's own pages
cannot be moved: it is reported, and the file must be restored from a copy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runStoreRepair(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.quarantine, "quarantine", false, "move damaged sessions into the quarantine table of events.db")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print the reports before and after, and what was moved, as JSON")
	return cmd
}

// runStoreRepair runs `hermes store repair`.
func runStoreRepair(ctx context.Context, opts *storeRepairOptions) error {
	if !opts.quarantine {
		return fmt.Errorf("say how to repair: --quarantine moves damaged sessions out of the log (the only way there is)")
	}
	if opts.app.ReadOnly {
		return fmt.Errorf("repair writes the event log: drop --read-only")
	}
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	if err := opts.app.EmbeddedOnly(home, "store repair"); err != nil {
		return err
	}
	s, err := embedded.Open(filepath.Join(home, "events.db"), opts.app.EmbeddedOptions(home)...)
	if err != nil {
		return err
	}
	defer s.Close()
	before, err := s.Verify(ctx)
	if err != nil {
		return err
	}
	fix, err := s.Quarantine(ctx, before)
	if err != nil {
		return err
	}
	after, err := s.Verify(ctx)
	if err != nil {
		return err
	}
	out := opts.io.Out
	if opts.asJSON {
		if err := writeJSON(out, map[string]any{"before": before, "repair": fix, "after": after}); err != nil {
			return err
		}
	} else {
		if !before.Damaged() {
			fmt.Fprintln(out, "no damage: nothing to repair")
		}
		for _, m := range fix.Moved {
			fmt.Fprintf(out, "moved %s to quarantine: %d rows (%s)\n", m.Stream, m.Rows, m.Reason)
		}
		for _, p := range fix.Lost {
			fmt.Fprintf(out, "position %d was lost: recorded as erased\n", p)
		}
		if fix.Reindexed {
			fmt.Fprintln(out, "rebuilt the indexes and the streams' recorded ends from the rows")
		}
		if after.Damaged() {
			fmt.Fprintln(out, "\ndamage a repair cannot move (restore events.db from a copy):")
			for _, p := range after.Problems {
				fmt.Fprintf(out, "  %s\n", p)
			}
		} else if before.Damaged() {
			fmt.Fprintln(out, "the log now verifies clean")
		}
	}
	if after.Damaged() {
		return &exitError{code: damageExit, err: fmt.Errorf("%s: %d problems left", after.File, len(after.Problems))}
	}
	return nil
}
