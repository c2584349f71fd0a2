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
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/storecopy"
	"github.com/hermes-go/hermes/schema"
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

// storeCopyOptions are the flags and arguments of `hermes store copy`.
type storeCopyOptions struct {
	app      *app.Factory
	io       app.IOStreams
	from, to string
	asJSON   bool
}

func storeCopyCmd(g *app.Factory) *cobra.Command {
	opts := &storeCopyOptions{app: g}
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
			opts.io = ioOf(cmd)
			return runStoreCopy(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.from, "from", "", "the store to copy (default: the store in use)")
	cmd.Flags().StringVar(&opts.to, "to", "", "the store to copy into: embedded:PATH, postgres://… or esdb://…")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// runStoreCopy runs `hermes store copy`.
func runStoreCopy(ctx context.Context, opts *storeCopyOptions) error {
	if opts.to == "" {
		return errors.New("say where to copy to: --to embedded:PATH, --to postgres://… or --to esdb://…")
	}
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	src, err := newCopyEnd(opts.app, home, opts.from)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	dst, err := newCopyEnd(opts.app, home, opts.to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if src.String() == dst.String() {
		return fmt.Errorf("--from and --to are the same store (%s)", src)
	}
	a, err := src.open(ctx, opts.app, true)
	if err != nil {
		return fmt.Errorf("open the source: %w", err)
	}
	defer a.Close()
	b, err := dst.open(ctx, opts.app, false)
	if err != nil {
		return fmt.Errorf("open the target: %w", err)
	}
	defer b.Close()
	opts.app.Log.Info().Str("from", src.String()).Str("to", dst.String()).Msg("copying the event log")
	rep, err := storecopy.Copy(ctx, a, b, storecopy.Options{Log: opts.app.Log})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	// The images events name live beside the log, in the home: a copy
	// into another home's events.db takes them along.
	srcBlobs, dstBlobs := blobs.Open(src.home(home)), blobs.Open(dst.home(home))
	var imgs blobCopy
	if srcBlobs.Dir() != dstBlobs.Dir() {
		if imgs, err = copyBlobs(ctx, a, srcBlobs, dstBlobs); err != nil {
			return fmt.Errorf("copy the images the log names to %s: %w", dstBlobs.Dir(), err)
		}
	}
	out := opts.io.Out
	if opts.asJSON {
		return writeJSON(out, map[string]any{"from": src.String(), "to": dst.String(), "report": rep, "images": imgs})
	}
	fmt.Fprintf(out, "copied %d events from %s to %s", rep.Copied, src, dst)
	if rep.Skipped > 0 {
		fmt.Fprintf(out, " (%d were there already and match)", rep.Skipped)
	}
	fmt.Fprintf(out, "\nverified: %d streams (%d deleted), %d events, sha256 %s\n",
		len(rep.Source.Streams), rep.Source.Deleted, rep.Source.Events, rep.Source.SHA256)
	if imgs.Copied+imgs.Present > 0 {
		fmt.Fprintf(out, "images: %d copied to %s (%d were there already)\n", imgs.Copied, dstBlobs.Dir(), imgs.Present)
	}
	if len(imgs.Missing) > 0 {
		fmt.Fprintf(out, "warning: %d images the log names are not in %s: the sessions that show them will say so\n", len(imgs.Missing), srcBlobs.Dir())
	}
	return nil
}

// home is the directory whose blobs/ holds the images of this end's log:
// an embedded store's directory, else this home.
func (e copyEnd) home(home string) string {
	if e.spec.Kind == config.StoreEmbedded {
		return filepath.Dir(e.path)
	}
	return home
}

// blobCopy says what copyBlobs did.
type blobCopy struct {
	Copied  int      `json:"copied"`
	Present int      `json:"present"`
	Missing []string `json:"missing,omitempty"`
}

// copyBlobs copies every image the log of s names from one blob store to
// another (bytes checked against their hash on the way).
func copyBlobs(ctx context.Context, s events.Store, from, to *blobs.Store) (blobCopy, error) {
	var c blobCopy
	seen := map[string]bool{}
	var after uint64
	for {
		rs, err := s.ReadAll(ctx, after, 1000)
		if err != nil {
			return c, err
		}
		if len(rs) == 0 {
			return c, nil
		}
		for _, r := range rs {
			after = r.Position
			if r.Type != schema.TypeUserMessageAdded && r.Type != schema.TypeSessionStarted {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return c, err
			}
			for _, ref := range schema.ImagesOf(p) {
				if seen[ref.SHA256] {
					continue
				}
				seen[ref.SHA256] = true
				if to.Has(ref.SHA256) {
					c.Present++
					continue
				}
				data, err := from.Get(ctx, ref.SHA256)
				if err != nil {
					c.Missing = append(c.Missing, ref.SHA256)
					continue
				}
				if _, err := to.Put(ctx, data); err != nil {
					return c, err
				}
				c.Copied++
			}
		}
	}
}
