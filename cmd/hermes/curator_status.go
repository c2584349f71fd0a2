package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/curator"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// curatorStatusOptions are the flags of `hermes curator status`.
type curatorStatusOptions struct {
	app   *app.Factory
	io    app.IOStreams
	flags curatorFlags
}

// curatorStatusCmd is `hermes curator status`.
func curatorStatusCmd(g *app.Factory) *cobra.Command {
	opts := &curatorStatusOptions{app: g}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the last curator run, every skill's use (from the sessions' skill_view calls) and what a run would archive now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runCuratorStatus(cmd.Context(), opts)
		},
	}
	opts.flags.register(cmd)
	return cmd
}

// runCuratorStatus runs `hermes curator status`.
func runCuratorStatus(ctx context.Context, opts *curatorStatusOptions) error {
	cfg, err := opts.flags.config()
	if err != nil {
		return err
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	w := opts.io.Out
	var last curatorLastRun
	if b, err := os.ReadFile(lastRunPath(a.Home)); err == nil && json.Unmarshal(b, &last) == nil {
		fmt.Fprintf(w, "last run %s at %s: %d proposed, archived %s\n", last.Run, last.Time.Local().Format("2006-01-02 15:04"), last.Proposed, orNone(last.Archived))
	} else {
		fmt.Fprintln(w, "no curator run yet")
	}
	r, err := curator.Survey(ctx, a.Store, skillsKeeper(a), cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tVERSION\tUSES\tLAST USED\tPINNED\tHUB")
	for _, s := range r.Skills {
		used := "never"
		if !s.LastUsed.IsZero() {
			used = s.LastUsed.Local().Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\tv%d\t%d\t%s\t%s\t%s\n", s.Name, s.Version, s.Uses, used, yesNo(s.Pinned), yesNo(s.Hub))
	}
	tw.Flush()
	fmt.Fprintln(w, "a run now would:")
	printCuratorReport(w, r)
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}
