package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// cronListOptions are the flags and arguments of `hermes cron list`.
type cronListOptions struct {
	app               *app.Factory
	io                app.IOStreams
	listAll, listJSON bool
}

// cronListCmd is `hermes cron list`.
func cronListCmd(g *app.Factory) *cobra.Command {
	opts := &cronListOptions{app: g}
	list := &cobra.Command{Use: "list", Short: "The jobs, when each runs next and how it last ran", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runCronList(cmd.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.listAll, "all", false, "include removed jobs")
	list.Flags().BoolVar(&opts.listJSON, "json", false, "JSON output")
	return list
}

// runCronList runs `hermes cron list`.
func runCronList(ctx context.Context, opts *cronListOptions) error {
	h, err := openCronHome(opts.app)
	if err != nil {
		return err
	}
	defer h.a.Close()
	all, err := h.jobs.Load(ctx)
	if err != nil {
		return err
	}
	var shown []*cron.Job
	for _, j := range all {
		if !j.Removed || opts.listAll {
			shown = append(shown, j)
		}
	}
	if opts.listJSON {
		return writeJSON(opts.io.Out, jobsJSON(shown))
	}
	if len(shown) == 0 {
		fmt.Fprintln(opts.io.Out, "no scheduled jobs yet: add one with `hermes cron add --schedule \"0 9 * * 1-5\" --prompt \"…\"`")
		return nil
	}
	tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tNEXT\tLAST\tDELIVER\tSTATE")
	for _, j := range shown {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, clip(j.Spec.Name, 30), scheduleText(j), nextText(j), lastText(j), j.Spec.Deliver, j.State())
	}
	return tw.Flush()
}

func scheduleText(j *cron.Job) string {
	s := j.Spec.Schedule
	if sch, err := j.Schedule(); err == nil && sch.Kind() == cron.KindOnce {
		return "once at " + localTime(j, sch.Next(time.Time{}))
	}
	if j.Spec.Timezone != "" {
		s += " (" + j.Spec.Timezone + ")"
	}
	return s
}

func localTime(j *cron.Job, t time.Time) string {
	loc := time.Local
	if j.Spec.Timezone != "" {
		if l, err := time.LoadLocation(j.Spec.Timezone); err == nil {
			loc = l
		}
	}
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

func nextText(j *cron.Job) string {
	switch {
	case len(j.Open) > 0:
		return "running"
	case !j.Active():
		return "-"
	case j.Retry != nil:
		return "now (retry)"
	}
	if n := j.NextSlot(); !n.IsZero() {
		return localTime(j, n)
	}
	return "-"
}

func lastText(j *cron.Job) string {
	if j.Last == nil {
		return "-"
	}
	return j.Last.Result() + " " + j.Last.StartedAt.Local().Format("01-02 15:04")
}

func jobsJSON(js []*cron.Job) []map[string]any {
	out := []map[string]any{}
	for _, j := range js {
		m := map[string]any{"id": j.ID, "spec": j.Spec, "state": j.State(), "created_at": j.CreatedAt, "runs": j.Runs}
		if n := j.NextSlot(); !n.IsZero() && j.Active() {
			m["next_run_at"] = n
		}
		if j.Last != nil {
			m["last"] = map[string]any{"run_id": j.Last.ID, "status": j.Last.Status, "result": j.Last.Result(), "error": j.Last.Error, "started_at": j.Last.StartedAt}
		}
		out = append(out, m)
	}
	return out
}
