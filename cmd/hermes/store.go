package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

func storeCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Check, repair and copy the event log"}
	cmd.AddCommand(storeVerify(g), storeRepair(g), storeCopyCmd(g), storeAccept(g))
	return cmd
}

// damageExit is the exit code of verify and repair when damage is (left).
const damageExit = 3

func storeVerify(g *app.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Read every event, check its checksum, place and payload; exit 3 on damage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			if err := g.EmbeddedOnly(home, "store verify"); err != nil {
				return err
			}
			var rep *embedded.Report
			s, err := g.OpenEmbedded(home)
			var lost *events.LogLostError
			switch {
			case errors.As(err, &lost):
				// The loss is the finding: what the file holds now, and the
				// sessions that went with the log, are reported with it.
				if rep, err = lostReport(g, cmd.Context(), home, lost); err != nil {
					return err
				}
			case err != nil:
				return err
			default:
				defer s.Close()
				if rep, err = s.Verify(cmd.Context()); err != nil {
					return err
				}
				if err := lostSessions(cmd.Context(), home, s, s.Identity().ID, rep); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				printReport(out, rep)
				if lost != nil {
					fmt.Fprintln(out, "\nrestore events.db from a backup (or a copy a running hermes saved beside it, events-rescued-*.db), then verify again; `hermes store accept` takes the log as it is if the loss is deliberate")
				} else if rep.Damaged() {
					fmt.Fprintln(out, "\n`hermes store repair --quarantine` moves the damaged sessions out of the log (into a quarantine table of events.db)")
				}
			}
			if rep.Damaged() {
				return &exitError{code: damageExit, err: fmt.Errorf("%s: %d problems found", rep.File, len(rep.Problems))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printReport(w io.Writer, rep *embedded.Report) {
	fmt.Fprintf(w, "%s\n", rep.File)
	if rep.Log.ID != "" {
		fmt.Fprintf(w, "log %s, created %s\n", rep.Log.ID, rep.Log.Created.Local().Format(time.DateTime))
	}
	fmt.Fprintf(w, "%d events in %d streams, head at position %d, %d positions erased\n", rep.Events, rep.Streams, rep.Head, rep.Erased)
	if rep.Unknown > 0 {
		fmt.Fprintf(w, "%d events of types this build does not know (written by a newer Hermes; not damage)\n", rep.Unknown)
	}
	for _, m := range rep.Quarantined {
		what := m.Stream
		if what == "" {
			what = "lost positions"
		}
		fmt.Fprintf(w, "moved to quarantine %s: %s, %d rows (%s)\n", m.At.Local().Format(time.DateTime), what, m.Rows, m.Reason)
	}
	if !rep.Damaged() {
		fmt.Fprintln(w, "ok: no damage")
		return
	}
	fmt.Fprintf(w, "DAMAGE: %d problems\n", len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

func storeRepair(g *app.Factory) *cobra.Command {
	var quarantine, asJSON bool
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
			if !quarantine {
				return fmt.Errorf("say how to repair: --quarantine moves damaged sessions out of the log (the only way there is)")
			}
			if g.ReadOnly {
				return fmt.Errorf("repair writes the event log: drop --read-only")
			}
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			if err := g.EmbeddedOnly(home, "store repair"); err != nil {
				return err
			}
			s, err := embedded.Open(filepath.Join(home, "events.db"), g.EmbeddedOptions(home)...)
			if err != nil {
				return err
			}
			defer s.Close()
			ctx := cmd.Context()
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
			out := cmd.OutOrStdout()
			if asJSON {
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
		},
	}
	cmd.Flags().BoolVar(&quarantine, "quarantine", false, "move damaged sessions into the quarantine table of events.db")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports before and after, and what was moved, as JSON")
	return cmd
}
