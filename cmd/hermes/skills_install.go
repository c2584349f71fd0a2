package main

import (
	"context"
	"fmt"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"

	"github.com/spf13/cobra"
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

// runSkillsInstall runs `hermes skills install`.
func runSkillsInstall(ctx context.Context, opts *skillsInstallOptions) error {
	l, err := skillsLibrary(opts.app)
	if err != nil {
		return err
	}
	install := l.Install
	if opts.force {
		install = l.Reinstall
	}
	s, err := install(opts.path)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "installed %s: %s\n", s.Name, s.Path)
	return nil
}
