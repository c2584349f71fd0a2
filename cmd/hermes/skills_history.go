package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsHistoryOptions are the flags and arguments of `hermes skills history`.
type skillsHistoryOptions struct {
	app  *app.Factory
	io   app.IOStreams
	name string
}

// skillsHistoryCmd is `hermes skills history`.
func skillsHistoryCmd(g *app.Factory) *cobra.Command {
	opts := &skillsHistoryOptions{app: g}
	return &cobra.Command{
		Use: "history NAME", Short: "List a skill's versions: who wrote each, when and why", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runSkillsHistory(cmd.Context(), opts)
		},
	}
}

// runSkillsHistory runs `hermes skills history`.
func runSkillsHistory(ctx context.Context, opts *skillsHistoryOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	hist, _, err := skills.History(ctx, a.Store, opts.name)
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("skill %s has no history: hermes skills list shows the skills there are", opts.name)
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIME\tAUTHOR\tACTION\tSIZE\tREASON")
	for _, v := range hist {
		size := fmt.Sprintf("%d B", v.Files.Size())
		if v.Archived {
			size = "-"
		}
		fmt.Fprintf(tw, "v%d\t%s\t%s\t%s\t%s\t%s\n", v.Number, v.Time.Local().Format("2006-01-02 15:04:05"), v.Author, v.Action, size, strings.ReplaceAll(v.Reason, "\n", " "))
	}
	return tw.Flush()
}
