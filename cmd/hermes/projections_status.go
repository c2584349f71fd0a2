package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/search"
)

// projectionsStatusOptions are the flags and arguments of `hermes projections status`.
type projectionsStatusOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// projectionsStatusCmd is `hermes projections status`.
func projectionsStatusCmd(g *app.Factory) *cobra.Command {
	opts := &projectionsStatusOptions{app: g}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each projection's checkpoint against the end of the log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runProjectionsStatus(cmd.Context(), opts)
		},
	}
	return status
}

// runProjectionsStatus runs `hermes projections status`.
func runProjectionsStatus(ctx context.Context, opts *projectionsStatusOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	st, err := a.Runner.Status(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tCHECKPOINT\tHEAD\tBEHIND")
	for _, s := range st {
		note := ""
		if s.FedBy != "" {
			note = "\tfed by " + s.FedBy
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d%s\n", s.Name, s.Checkpoint, s.Head, s.Behind, note)
	}
	// The search index lives in its own files (search.bleve).
	head, _ := a.Store.Head(ctx)
	path := filepath.Join(a.Home, "search.bleve")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(tw, "search\t0\t%d\t%d\t(not built yet: the next hermes search builds it)\n", head, head)
	} else if opts.app.ReadOnlyHome(a.Home) {
		fmt.Fprintf(tw, "search\t-\t%d\t-\t(read-only home: the index is not opened)\n", head)
	} else if idx, err := search.Open(path); err != nil {
		fmt.Fprintf(tw, "search\t-\t%d\t-\t(%v)\n", head, err)
	} else {
		cp, cerr := idx.Checkpoint(ctx)
		idx.Close()
		if cerr != nil {
			return cerr
		}
		fmt.Fprintf(tw, "search\t%d\t%d\t%d\n", cp, head, head-min(cp, head))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ds, err := a.Runner.Damaged(ctx)
	if err != nil {
		return err
	}
	for _, d := range ds {
		fmt.Fprintf(opts.io.Out, "left out, damaged: %s\n", d)
	}
	if len(ds) > 0 {
		fmt.Fprintln(opts.io.Out, "(`hermes store verify` shows the damage, `hermes store repair --quarantine` moves it aside)")
	}
	return nil
}
