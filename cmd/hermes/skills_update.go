package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsUpdateOptions are the flags and arguments of `hermes skills update`.
type skillsUpdateOptions struct {
	app        *app.Factory
	io         app.IOStreams
	names      []string
	yes, force bool
}

// skillsUpdateCmd is `hermes skills update`.
func skillsUpdateCmd(g *app.Factory) *cobra.Command {
	opts := &skillsUpdateOptions{app: g}
	cmd := &cobra.Command{
		Use:   "update [NAME...]",
		Short: "Update skills installed from a hub (default: all of them): verified, scanned and shown first; a version that does not match what its source promises is refused",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.names = args
			return runSkillsUpdate(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask before updating")
	cmd.Flags().BoolVar(&opts.force, "force", false, "update despite high-severity findings, and over changes made here since the install (they stay in the history)")
	return cmd
}

// runSkillsUpdate runs `hermes skills update`.
func runSkillsUpdate(ctx context.Context, opts *skillsUpdateOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	list, err := hubInstalled(ctx, a, opts.names)
	if err != nil {
		return err
	}
	hub, _ := skillHub(a.Home)
	k := skillsKeeper(a)
	var failed []error
	for _, in := range list {
		err := func() error {
			latest, err := hub.Latest(ctx, in.Origin.Source)
			if err != nil {
				return err
			}
			if latest == in.Origin.Pin {
				fmt.Fprintf(opts.io.Out, "%s: up to date (%s)\n", in.Name, shortPin(latest))
				return nil
			}
			if err := hub.Follows(ctx, in.Origin.Source, in.Origin.Pin, latest); err != nil {
				return err
			}
			b, err := hub.Fetch(ctx, in.Origin.Source, latest)
			if err != nil {
				return err
			}
			if b.Name != in.Name {
				return fmt.Errorf("the new version names itself %q: install it as a skill of its own", b.Name)
			}
			if in.Modified && !opts.force {
				return fmt.Errorf("changed here since version %d (hermes skills diff %s %d shows how); --force updates over the change, which stays in the history", in.Version.Number, in.Name, in.Version.Number)
			}
			findings, err := vetBundle(opts.io, b, "update", opts.yes, opts.force)
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("updated from %s to %s by %s; %s", shortPin(in.Origin.Pin), shortPin(b.Origin.Pin), person(), scanSummary(findings))
			v, err := skillhub.Write(ctx, k, b, "update", true, reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(opts.io.Out, "updated %s: version %d, pinned to %s\n", in.Name, v.Number, b.Origin.Pin)
			return nil
		}()
		if err != nil {
			var te *skillhub.TamperedError
			if errors.As(err, &te) {
				err = fmt.Errorf("%s: %w; the installed version %d is kept", in.Name, err, in.Version.Number)
			} else {
				err = fmt.Errorf("%s: %w", in.Name, err)
			}
			fmt.Fprintln(opts.io.ErrOut, err)
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d skill(s) not updated", len(failed), len(list))
	}
	return nil
}
