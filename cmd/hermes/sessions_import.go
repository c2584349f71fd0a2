package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// sessionsImportOptions are the flags and arguments of `hermes sessions import`.
type sessionsImportOptions struct {
	app   *app.Factory
	io    app.IOStreams
	file  string
	newID string
}

func sessionsImport(g *app.Factory) *cobra.Command {
	opts := &sessionsImportOptions{app: g}
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Append exported events as a session (same id, or --id NEWID); - reads stdin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.file = args[0]
			return runSessionsImport(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.newID, "id", "", "import under this new session id")
	return cmd
}

// runSessionsImport runs `hermes sessions import`.
func runSessionsImport(ctx context.Context, opts *sessionsImportOptions) error {
	in := opts.io.In
	if opts.file != "-" {
		f, err := os.Open(opts.file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	id, n, err := session.Import(ctx, a.Store, in, opts.newID, a.Blobs())
	if err != nil {
		return fmt.Errorf("import %s: %w (nothing was written)", opts.file, err)
	}
	fmt.Fprintf(opts.io.Out, "%s\n", id)
	fmt.Fprintf(opts.io.ErrOut, "imported %d events as session %s\n", n, id)
	return nil
}
