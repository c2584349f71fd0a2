package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// memoryResetOptions are the flags of `hermes memory reset`.
type memoryResetOptions struct {
	app    *app.Factory
	io     app.IOStreams
	target string
	yes    bool
	undo   bool
}

// memoryResetCmd is `hermes memory reset`.
func memoryResetCmd(g *app.Factory) *cobra.Command {
	opts := &memoryResetOptions{app: g}
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Empty MEMORY.md and USER.md (as events: the log keeps what they held, and reset --undo puts it back)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runMemoryReset(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.target, "target", "all", "which to reset: all, memory (MEMORY.md) or user (USER.md)")
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask")
	cmd.Flags().BoolVar(&opts.undo, "undo", false, "put back what the last reset removed (if nothing changed since)")
	return cmd
}

// runMemoryReset runs `hermes memory reset`.
func runMemoryReset(ctx context.Context, opts *memoryResetOptions) error {
	targets, err := memoryTargets(opts.target)
	if err != nil {
		return err
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	dir := filepath.Join(a.Home, "memories")
	w := opts.io.Out
	if opts.undo {
		back, err := memory.UndoReset(ctx, a.Store, dir, targets...)
		for _, t := range targets {
			if e := back[t]; len(e) > 0 {
				fmt.Fprintf(w, "restored %d entries of %s\n", len(e), memory.Files[t])
			}
		}
		if err == nil && len(back) == 0 {
			fmt.Fprintln(w, "nothing to undo: the last change of each is not a reset (hermes memory status shows what memory holds)")
		}
		return err
	}
	var any bool
	for _, t := range targets {
		entries, _, err := memory.Current(ctx, a.Store, t)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			any = true
			fmt.Fprintf(w, "will remove %s\n", memory.Describe(t, entries))
		}
	}
	if !any {
		fmt.Fprintf(w, "nothing to reset: %s hold no entries\n", strings.Join(fileNames(targets), " and "))
		return nil
	}
	if err := confirm(opts.io, "Reset?", opts.yes); err != nil {
		return err
	}
	removed, err := memory.Reset(ctx, a.Store, dir, targets...)
	for _, t := range targets {
		if e := removed[t]; len(e) > 0 {
			fmt.Fprintf(w, "reset %s: %d entries removed (kept in the log: hermes memory reset --undo puts them back)\n", memory.Files[t], len(e))
		}
	}
	return err
}

func fileNames(targets []string) []string {
	var out []string
	for _, t := range targets {
		out = append(out, memory.Files[t])
	}
	return out
}
