package main

import (
	"context"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"os"

	"github.com/spf13/cobra"
)

// skillsShowOptions are the flags and arguments of `hermes skills show`.
type skillsShowOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

// skillsShowCmd is `hermes skills show`.
func skillsShowCmd(g *app.Factory) *cobra.Command {
	opts := &skillsShowOptions{app: g}
	cmd := &cobra.Command{
		Use: "show NAME", Short: "Print a skill", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runSkillsShow(cmd.Context(), opts)
		},
	}
	return cmd
}

// runSkillsShow runs `hermes skills show`.
func runSkillsShow(ctx context.Context, opts *skillsShowOptions) error {
	l, err := skillsLibrary(opts.app)
	if err != nil {
		return err
	}
	s, err := l.Get(opts.name)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return err
	}
	_, err = opts.io.Out.Write(data)
	return err
}
