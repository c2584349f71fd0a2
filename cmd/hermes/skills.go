package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func skillsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "skills", Short: "List, show and install skills"}
	cmd.AddCommand(skillsListCmd(g), skillsShowCmd(g), skillInstallCmd(g))
	return cmd
}

// skillsLibrary is the skills of the home, and of the working directory.
func skillsLibrary(g *app.Factory) (skills.Library, error) {
	home, err := g.ResolveHome()
	if err != nil {
		return skills.Library{}, err
	}
	wd, _ := os.Getwd()
	return app.Library(home, wd), nil
}
