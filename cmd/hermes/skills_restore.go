package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsRestoreCmd is `hermes skills restore`: an archived skill back as
// it was when archived.
func skillsRestoreCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{Use: "restore NAME", Short: "Bring back an archived (or uninstalled) skill as it was, as a new version", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			v, err := skillsKeeper(a).Restore(cmd.Context(), args[0], person(), "restored by "+person().String())
			if err != nil {
				return err
			}
			fmt.Fprintf(ioOf(cmd).Out, "restored %s: version %d\n", args[0], v.Number)
			return nil
		}}
}
