package main

import (
	"context"
	"fmt"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// skillsListOptions are the flags and arguments of `hermes skills list`.
type skillsListOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// skillsListCmd is `hermes skills list`.
func skillsListCmd(g *app.Factory) *cobra.Command {
	opts := &skillsListOptions{app: g}
	cmd := &cobra.Command{
		Use: "list", Short: "List skills", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runSkillsList(cmd.Context(), opts)
		},
	}
	return cmd
}

// runSkillsList runs `hermes skills list`.
func runSkillsList(ctx context.Context, opts *skillsListOptions) error {
	l, err := skillsLibrary(opts.app)
	if err != nil {
		return err
	}
	all, errs := l.All()
	for _, e := range errs {
		fmt.Fprintln(opts.io.ErrOut, "warning:", e)
	}
	if len(all) == 0 {
		fmt.Fprintln(opts.io.Out, "no skills yet")
		return nil
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION\tPATH")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, clip(s.Description, 60), s.Path)
	}
	return tw.Flush()
}
