package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// skillInstallCmd is `hermes skills install`.
func skillInstallCmd(lib func() (skills.Library, error)) *cobra.Command {
	var force bool
	install := &cobra.Command{
		Use: "install PATH", Short: "Copy a skill directory (holding SKILL.md) into $HERMES_HOME/skills (--force replaces an installed one)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := lib()
			if err != nil {
				return err
			}
			install := l.Install
			if force {
				install = l.Reinstall
			}
			s, err := install(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s: %s\n", s.Name, s.Path)
			return nil
		},
	}
	install.Flags().BoolVar(&force, "force", false, "replace an installed skill of the same name")
	return install
}
