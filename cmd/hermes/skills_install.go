package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsInstallOptions are the flags and arguments of `hermes skills install`.
type skillsInstallOptions struct {
	app   *app.Factory
	io    app.IOStreams
	path  string
	force bool
}

// skillInstallCmd is `hermes skills install`.
func skillInstallCmd(g *app.Factory) *cobra.Command {
	opts := &skillsInstallOptions{app: g}
	install := &cobra.Command{
		Use: "install PATH", Short: "Copy a skill directory (holding SKILL.md) into $HERMES_HOME/skills (--force replaces an installed one)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.path = args[0]
			return runSkillsInstall(cmd.Context(), opts)
		},
	}
	install.Flags().BoolVar(&opts.force, "force", false, "replace an installed skill of the same name")
	return install
}

// runSkillsInstall runs `hermes skills install`: the skill becomes a
// version of its stream, by the person at the command line.
func runSkillsInstall(ctx context.Context, opts *skillsInstallOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	v, path, err := skillsKeeper(a).Install(ctx, opts.path, opts.force, person())
	if err != nil {
		return err
	}
	s, err := skills.Parse(v.Files.SkillMD())
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "installed %s: %s (version %d)\n", s.Name, path, v.Number)
	return nil
}
