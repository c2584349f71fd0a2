package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsInspectOptions are the flags and arguments of `hermes skills inspect`.
type skillsInspectOptions struct {
	app    *app.Factory
	io     app.IOStreams
	source string
}

// skillsInspectCmd is `hermes skills inspect`.
func skillsInspectCmd(g *app.Factory) *cobra.Command {
	opts := &skillsInspectOptions{app: g}
	return &cobra.Command{
		Use:   "inspect SOURCE",
		Short: "Show a hub's skill without installing it: where from, the pin, its files, the scan's findings and its SKILL.md",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.source = args[0]
			return runSkillsInspect(cmd.Context(), opts)
		},
	}
}

// runSkillsInspect runs `hermes skills inspect`.
func runSkillsInspect(ctx context.Context, opts *skillsInspectOptions) error {
	src, err := skillhub.ParseSource(opts.source, githubBase())
	if err != nil {
		return err
	}
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	hub, _ := skillHub(home)
	b, err := hub.Fetch(ctx, src, "")
	if err != nil {
		return err
	}
	describeBundle(opts.io.Out, b, skillhub.Scan(b.Files))
	fmt.Fprintf(opts.io.Out, "\n%s", b.Files.SkillMD())
	return nil
}
