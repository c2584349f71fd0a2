package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/importer"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// importHermesStateOptions are the flags and arguments of `hermes import hermes-state`.
type importHermesStateOptions struct {
	app  *app.Factory
	io   app.IOStreams
	path string
}

// importHermesStateCmd is `hermes import hermes-state`.
func importHermesStateCmd(g *app.Factory) *cobra.Command {
	opts := &importHermesStateOptions{app: g}
	cmd := &cobra.Command{
		Use:   "hermes-state PATH",
		Short: "Import the sessions of a Python Hermes Agent state.db, and the memories and skills of its home (what is already here is skipped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.path = args[0]
			return runImportHermesState(cmd.Context(), opts)
		},
	}
	return cmd
}

// runImportHermesState runs `hermes import hermes-state`.
func runImportHermesState(ctx context.Context, opts *importHermesStateOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	rep, err := importer.HermesState(ctx, opts.path, a.Store)
	if err != nil {
		return err
	}
	if err := a.Fresh(ctx); err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "imported %d sessions (%d messages); %d already there\n", rep.Sessions, rep.Messages, rep.Skipped)
	return importHomeBeside(ctx, a, filepath.Dir(opts.path), opts.io)
}

// importHomeBeside imports the memories and skills of the Python agent's
// home src (the directory of its state.db) into a's home: memory entries
// not there yet are added, skills whose names are not there yet copied;
// nothing here is removed or replaced. When src is a's home itself, its
// files are already the home's (and its memory files were adopted when the
// home was opened).
func importHomeBeside(ctx context.Context, a *app.App, src string, io app.IOStreams) error {
	if same(src, a.Home) {
		fmt.Fprintln(io.Out, "memories and skills: the state.db is in this home, they are already here")
		return nil
	}
	var errs []error
	added := 0
	for target, name := range memory.Files {
		p := filepath.Join(src, "memories", name)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := memory.Import(ctx, a.Store, filepath.Join(a.Home, "memories"), target, string(b), "imported from "+p)
		added += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	lib := skills.Library{Dirs: []string{filepath.Join(a.Home, "skills")}}
	imported, skipped, serrs := lib.ImportTree(filepath.Join(src, "skills"))
	errs = append(errs, serrs...)
	for _, name := range imported { // each skill's history starts now, not at the next open
		if _, err := skillsKeeper(a).Adopt(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(io.Out, "imported %d memory entries and %d skills; %d skills already there\n", added, len(imported), len(skipped))
	if err := a.Fresh(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// same says whether a and b are one directory.
func same(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}
