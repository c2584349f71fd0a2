package main

import (
	"os"
	"os/user"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

func skillsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "skills", Short: "List, show and install skills; see, compare and roll back their versions"}
	cmd.AddCommand(skillsListCmd(g), skillsShowCmd(g), skillInstallCmd(g), skillsHistoryCmd(g), skillsDiffCmd(g), skillsRollbackCmd(g))
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

// skillsKeeper is the keeper of the home's skills, kept as events in a's
// store (the home was adopted when a was opened).
func skillsKeeper(a *app.App) *skills.Keeper {
	return skills.NewKeeper(a.Store, filepath.Join(a.Home, "skills"))
}

// person is who runs the command, as a skill's history names its author.
func person() schema.SkillAuthor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "cli"
	}
	return schema.SkillAuthor{Kind: schema.AuthorPerson, Person: name}
}
