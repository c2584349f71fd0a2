package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// skillsShowCmd is `hermes skills show`.
func skillsShowCmd(lib func() (skills.Library, error)) *cobra.Command {
	return &cobra.Command{
		Use: "show NAME", Short: "Print a skill", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := lib()
			if err != nil {
				return err
			}
			s, err := l.Get(args[0])
			if err != nil {
				return err
			}
			data, err := os.ReadFile(s.Path)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}
