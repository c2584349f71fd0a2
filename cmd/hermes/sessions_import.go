package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func sessionsImport(g *app.Factory) *cobra.Command {
	var newID string
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Append exported events as a session (same id, or --id NEWID); - reads stdin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			id, n, err := session.Import(cmd.Context(), a.Store, in, newID)
			if err != nil {
				return fmt.Errorf("import %s: %w (nothing was written)", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
			fmt.Fprintf(cmd.ErrOrStderr(), "imported %d events as session %s\n", n, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&newID, "id", "", "import under this new session id")
	return cmd
}
