package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/importer"
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
		Short: "Import the sessions of a Python Hermes Agent state.db (sessions already imported are skipped)",
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
	return nil
}
