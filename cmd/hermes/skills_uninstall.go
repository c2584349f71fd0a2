package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// skillsUninstallOptions are the flags and arguments of `hermes skills uninstall`.
type skillsUninstallOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

// skillsUninstallCmd is `hermes skills uninstall`.
func skillsUninstallCmd(g *app.Factory) *cobra.Command {
	opts := &skillsUninstallOptions{app: g}
	return &cobra.Command{
		Use:   "uninstall NAME",
		Short: "Remove a skill installed from a hub: its directory goes, its history stays (hermes skills rollback NAME brings it back)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runSkillsUninstall(cmd.Context(), opts)
		},
	}
}

// runSkillsUninstall runs `hermes skills uninstall`: a SkillArchived on
// the skill's stream, by the hub it came from.
func runSkillsUninstall(ctx context.Context, opts *skillsUninstallOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	hist, _, err := skills.History(ctx, a.Store, opts.name)
	if err != nil {
		return err
	}
	in, ok, err := skillhub.InstalledOf(hist, githubBase())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("skill %s was not installed from a hub: hermes skills list shows the skills, and the agent's skill_manage delete archives one of its own", opts.name)
	}
	if in.Archived {
		return fmt.Errorf("skill %s is not installed (uninstalled or archived at version %d)", opts.name, len(hist))
	}
	v, err := skillsKeeper(a).Archive(ctx, opts.name, schema.SkillAuthor{Kind: schema.AuthorHub, Hub: in.Origin.String()},
		fmt.Sprintf("uninstalled by %s", person()))
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "uninstalled %s: version %d archives it; its history is kept and hermes skills rollback %s brings it back\n", opts.name, v.Number, opts.name)
	return nil
}
