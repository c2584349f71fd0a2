package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsInstallOptions are the flags and arguments of `hermes skills install`.
type skillsInstallOptions struct {
	app   *app.Factory
	io    app.IOStreams
	path  string
	force bool
	yes   bool
}

// skillInstallCmd is `hermes skills install`.
func skillInstallCmd(g *app.Factory) *cobra.Command {
	opts := &skillsInstallOptions{app: g}
	install := &cobra.Command{
		Use:   "install PATH|SOURCE",
		Short: "Install a skill from a directory (holding SKILL.md) or from a hub: a git repository or a well-known index, pinned and scanned first",
		Long: `Install a skill into $HERMES_HOME/skills, as a version of its history.

PATH is a directory holding SKILL.md. SOURCE is a skill of a hub:
  owner/repo/path/to/skill[@ref]              a GitHub repository
  git+URL//path/to/skill[@ref]                any git repository
  https://host/.well-known/agent-skills/NAME  a skill of a well-known index
A hub's skill is pinned to the commit (or the content digest) fetched,
checked against what the index promises, and scanned (scripts, dangerous
commands, prompt-injection text, the toolsets it asks for); the findings
are shown and you are asked. Without a terminal, --yes is needed; a
high-severity finding is refused unless --force.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.path = args[0]
			return runSkillsInstall(cmd.Context(), opts)
		},
	}
	install.Flags().BoolVar(&opts.force, "force", false, "replace an installed skill of the same name (its history stays); from a hub, also install despite high-severity findings")
	install.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask before installing from a hub")
	return install
}

// runSkillsInstall runs `hermes skills install`: the skill becomes a
// version of its stream, by the person at the command line (a directory)
// or by the hub (a source).
func runSkillsInstall(ctx context.Context, opts *skillsInstallOptions) error {
	if _, err := os.Stat(opts.path); err != nil {
		src, perr := skillhub.ParseSource(opts.path, githubBase())
		if perr != nil {
			return fmt.Errorf("%s is neither a skill directory (%v) nor a hub's skill (%v)", opts.path, err, perr)
		}
		return runHubInstall(ctx, opts, src)
	}
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

// runHubInstall installs src's skill from its hub.
func runHubInstall(ctx context.Context, opts *skillsInstallOptions, src skillhub.Source) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	hub, _ := skillHub(a.Home)
	b, err := hub.Fetch(ctx, src, "")
	if err != nil {
		return err
	}
	k := skillsKeeper(a)
	if hist, _, err := skills.History(ctx, a.Store, b.Name); err == nil && len(hist) > 0 && !hist[len(hist)-1].Archived && !opts.force {
		return fmt.Errorf("%w: %s (use --force to replace it; its history stays)", skills.ErrSkillExists, b.Name)
	}
	findings, err := vetBundle(opts.io, b, "install", opts.yes, opts.force)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("installed from %s at %s by %s; %s", b.Origin.Source, shortPin(b.Origin.Pin), person(), scanSummary(findings))
	v, err := skillhub.Write(ctx, k, b, "install", opts.force, reason)
	if err != nil {
		var fe *skills.ForeignError
		if !errors.As(err, &fe) {
			return err
		}
		fmt.Fprintln(opts.io.ErrOut, "warning:", err)
	}
	fmt.Fprintf(opts.io.Out, "installed %s: version %d, pinned to %s (hermes skills history %s shows it; hermes skills uninstall %s removes it)\n", b.Name, v.Number, b.Origin.Pin, b.Name, b.Name)
	return nil
}
