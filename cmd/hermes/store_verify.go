package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

// storeVerifyOptions are the flags and arguments of `hermes store verify`.
type storeVerifyOptions struct {
	app    *app.Factory
	io     app.IOStreams
	asJSON bool
}

func storeVerify(g *app.Factory) *cobra.Command {
	opts := &storeVerifyOptions{app: g}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Read every event, check its checksum, place and payload; exit 3 on damage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runStoreVerify(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// runStoreVerify runs `hermes store verify`.
func runStoreVerify(ctx context.Context, opts *storeVerifyOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	if err := opts.app.EmbeddedOnly(home, "store verify"); err != nil {
		return err
	}
	var rep *embedded.Report
	s, err := opts.app.OpenEmbedded(home)
	var lost *events.LogLostError
	switch {
	case errors.As(err, &lost):
		// The loss is the finding: what the file holds now, and the
		// sessions that went with the log, are reported with it.
		if rep, err = lostReport(ctx, opts.app, home, lost); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		defer s.Close()
		if rep, err = s.Verify(ctx); err != nil {
			return err
		}
		if err := lostSessions(ctx, home, s, s.Identity().ID, rep); err != nil {
			return err
		}
	}
	out := opts.io.Out
	if opts.asJSON {
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
