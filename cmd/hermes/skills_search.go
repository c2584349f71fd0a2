package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsSearchOptions are the flags and arguments of `hermes skills search`.
type skillsSearchOptions struct {
	app    *app.Factory
	io     app.IOStreams
	query  string
	source string
}

// skillsSearchCmd is `hermes skills search`.
func skillsSearchCmd(g *app.Factory) *cobra.Command {
	opts := &skillsSearchOptions{app: g}
	cmd := &cobra.Command{
		Use:   "search [QUERY]",
		Short: "Search the taps (hermes skills tap list) for skills whose name or description holds every word of QUERY",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.query = strings.Join(args, " ")
			return runSkillsSearch(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.source, "source", "", "search this repository or index instead of the taps")
	return cmd
}

// runSkillsSearch runs `hermes skills search`.
func runSkillsSearch(ctx context.Context, opts *skillsSearchOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	hub, taps := skillHub(home)
	var srcs []skillhub.Source
	var errs []error
	if opts.source != "" {
		s, err := skillhub.ParseSource(opts.source, githubBase())
		if err != nil {
			return err
		}
		srcs = []skillhub.Source{s}
	} else {
		srcs, errs = taps.Sources()
	}
	var found []skillhub.Entry
	for _, src := range srcs {
		list, err := hub.List(ctx, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
			continue
		}
		for _, e := range list {
			if skillhub.Match(e, opts.query) {
				found = append(found, e)
			}
		}
	}
	for _, e := range errs {
		fmt.Fprintln(opts.io.ErrOut, "warning:", e)
	}
	if len(found) == 0 {
		fmt.Fprintln(opts.io.Out, "no skills found")
		return nil
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION\tINSTALL WITH")
	for _, e := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, clip(e.Description, 60), e.Source)
	}
	return tw.Flush()
}
