package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsCheckOptions are the flags and arguments of `hermes skills check`.
type skillsCheckOptions struct {
	app   *app.Factory
	io    app.IOStreams
	names []string
}

// skillsCheckCmd is `hermes skills check`.
func skillsCheckCmd(g *app.Factory) *cobra.Command {
	opts := &skillsCheckOptions{app: g}
	return &cobra.Command{
		Use:   "check [NAME...]",
		Short: "Say which skills installed from a hub have an update (default: all of them)",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.names = args
			return runSkillsCheck(cmd.Context(), opts)
		},
	}
}

// hubInstalled lists the skills names (none: every skill of the home) the
// hub installed and that are installed still.
func hubInstalled(ctx context.Context, a *app.App, names []string) ([]skillhub.Installed, error) {
	all := len(names) == 0
	if all {
		names = skillsKeeper(a).Names()
	}
	var out []skillhub.Installed
	for _, n := range names {
		hist, _, err := skills.History(ctx, a.Store, n)
		if err != nil {
			return nil, err
		}
		in, ok, err := skillhub.InstalledOf(hist, githubBase())
		if err != nil {
			return nil, fmt.Errorf("skill %s: %w", n, err)
		}
		if !ok || in.Archived {
			if !all {
				return nil, fmt.Errorf("skill %s is not installed from a hub", n)
			}
			continue
		}
		in.Name = n
		out = append(out, in)
	}
	return out, nil
}

// hubStatus is what the source of in offers now: its latest pin, and
// whether that is an update in may take (err: the source could not be
// read, or its history was rewritten).
func hubStatus(ctx context.Context, hub *skillhub.Hub, in skillhub.Installed) (latest, status string, err error) {
	latest, err = hub.Latest(ctx, in.Origin.Source)
	if err != nil {
		return "", "", err
	}
	if latest == in.Origin.Pin {
		status = "up to date"
	} else {
		if err := hub.Follows(ctx, in.Origin.Source, in.Origin.Pin, latest); err != nil {
			return latest, "", err
		}
		status = "update available"
	}
	if in.Modified {
		status += fmt.Sprintf(", changed here since version %d", in.Version.Number)
	}
	return latest, status, nil
}

// runSkillsCheck runs `hermes skills check`.
func runSkillsCheck(ctx context.Context, opts *skillsCheckOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	list, err := hubInstalled(ctx, a, opts.names)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.io.Out, "no skills installed from a hub")
		return nil
	}
	hub, _ := skillHub(a.Home)
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTALLED\tLATEST\tSTATUS\tSOURCE")
	for _, in := range list {
		latest, status, err := hubStatus(ctx, hub, in)
		if err != nil {
			var te *skillhub.TamperedError
			if errors.As(err, &te) {
				status = "refused: " + te.Detail
			} else {
				status = "error: " + err.Error()
			}
		}
		if latest == "" {
			latest = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.Name, shortPin(in.Origin.Pin), shortPin(latest), status, in.Origin.Source)
	}
	return tw.Flush()
}
