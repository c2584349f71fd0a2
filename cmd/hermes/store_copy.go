package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/storecopy"
)

// copyEnd is one side of `store copy`: a store spec, or an embedded store
// at a path of its own (embedded:PATH).
type copyEnd struct {
	spec config.StoreSpec
	path string // the embedded store's file
}

func (e copyEnd) String() string {
	if e.spec.Kind == config.StoreEmbedded {
		return "embedded:" + e.path
	}
	return e.spec.String()
}

func newCopyEnd(g *app.Factory, home, v string) (copyEnd, error) {
	if p, ok := strings.CutPrefix(v, "embedded:"); ok {
		if p == "" {
			return copyEnd{}, errors.New("embedded: names no file: give embedded:PATH or embedded")
		}
		abs, err := filepath.Abs(p)
		return copyEnd{spec: config.StoreSpec{Kind: config.StoreEmbedded}, path: abs}, err
	}
	var spec config.StoreSpec
	var err error
	if v == "" {
		spec, err = g.StoreSpec(home)
	} else {
		spec, err = config.ParseStore(v)
	}
	if err != nil {
		return copyEnd{}, err
	}
	return copyEnd{spec: spec, path: filepath.Join(home, "events.db")}, nil
}

// open opens a side of the copy; an embedded source is opened read-only.
func (e copyEnd) open(ctx context.Context, g *app.Factory, source bool) (events.Store, error) {
	if e.spec.Kind != config.StoreEmbedded {
		return app.OpenSpec(ctx, e.spec, "", g.Log)
	}
	if source {
		return embedded.OpenReadOnly(e.path, embedded.WithLogger(g.Log))
	}
	return embedded.Open(e.path, embedded.WithLogger(g.Log))
}

func storeCopyCmd(g *app.Factory) *cobra.Command {
	var from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "copy --to STORE [--from STORE]",
		Short: "Copy every stream of one event store into another, verified; run it again to resume",
		Long: `Copy the whole event log from one store to another, in global order,
keeping every stream's revisions, event ids, times and payloads; a deleted
stream is deleted in the target too. A store is embedded (this home's
events.db), embedded:PATH (an events.db elsewhere), postgres://… or
esdb://…; --from defaults to the store in use (--store, HERMES_STORE or
store: in config.yaml).

The target must be empty, or hold the start of the source's log (a copy
that was interrupted): that part is checked event by event and skipped, and
the rest is copied. Anything else is refused before writing. At the end
both logs are summarised per stream (event count, deletion and a SHA-256
over each event) and must agree. Global positions are each store's own:
after switching stores the read models rebuild themselves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("say where to copy to: --to embedded:PATH, --to postgres://… or --to esdb://…")
			}
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			src, err := newCopyEnd(g, home, from)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			dst, err := newCopyEnd(g, home, to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if src.String() == dst.String() {
				return fmt.Errorf("--from and --to are the same store (%s)", src)
			}
			ctx := cmd.Context()
			a, err := src.open(ctx, g, true)
			if err != nil {
				return fmt.Errorf("open the source: %w", err)
			}
			defer a.Close()
			b, err := dst.open(ctx, g, false)
			if err != nil {
				return fmt.Errorf("open the target: %w", err)
			}
			defer b.Close()
			g.Log.Info().Str("from", src.String()).Str("to", dst.String()).Msg("copying the event log")
			rep, err := storecopy.Copy(ctx, a, b, storecopy.Options{Log: g.Log})
			if err != nil {
				return fmt.Errorf("copy %s to %s: %w", src, dst, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, map[string]any{"from": src.String(), "to": dst.String(), "report": rep})
			}
			fmt.Fprintf(out, "copied %d events from %s to %s", rep.Copied, src, dst)
			if rep.Skipped > 0 {
				fmt.Fprintf(out, " (%d were there already and match)", rep.Skipped)
			}
			fmt.Fprintf(out, "\nverified: %d streams (%d deleted), %d events, sha256 %s\n",
				len(rep.Source.Streams), rep.Source.Deleted, rep.Source.Events, rep.Source.SHA256)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the store to copy (default: the store in use)")
	cmd.Flags().StringVar(&to, "to", "", "the store to copy into: embedded:PATH, postgres://… or esdb://…")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
