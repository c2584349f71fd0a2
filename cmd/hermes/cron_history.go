package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// cronHistoryOptions are the flags and arguments of `hermes cron history`.
type cronHistoryOptions struct {
	app      *app.Factory
	io       app.IOStreams
	id       string
	histJSON bool
}

// cronHistoryCmd is `hermes cron history`.
func cronHistoryCmd(g *app.Factory) *cobra.Command {
	opts := &cronHistoryOptions{app: g}
	history := &cobra.Command{Use: "history ID", Short: "A job's changes, runs (how each ended, where it was delivered) and missed slots", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runCronHistory(cmd.Context(), opts)
		},
	}
	history.Flags().BoolVar(&opts.histJSON, "json", false, "JSON output")
	return history
}

// runCronHistory runs `hermes cron history`.
func runCronHistory(ctx context.Context, opts *cronHistoryOptions) error {
	h, err := openCronHome(opts.app)
	if err != nil {
		return err
	}
	defer h.a.Close()
	j, err := h.jobs.Find(ctx, opts.id)
	if err != nil {
		return err
	}
	rs, err := h.jobs.Events(ctx, j.ID)
	if err != nil {
		return err
	}
	entries, err := cron.History(rs)
	if err != nil {
		return err
	}
	if opts.histJSON {
		return writeJSON(opts.io.Out, entries)
	}
	return printHistory(opts.io.Out, j, entries)
}

func printHistory(w io.Writer, j *cron.Job, entries []cron.Entry) error {
	fmt.Fprintf(w, "job %s (%s): %s, %s\n\n", j.ID, j.Spec.Name, scheduleText(j), j.State())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEVENT\tRUN\tSLOT\tTRY\tSTATUS\tCOST\tDETAIL")
	for _, e := range entries {
		at := e.At.Local().Format("2006-01-02 15:04:05")
		if e.Run == nil {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t%s\n", at, e.Kind, e.Detail)
			continue
		}
		r := e.Run
		status, cost, detail := r.Result(), "", r.Deliveries()
		if r.CostUSD > 0 {
			cost = fmt.Sprintf("$%.4f", r.CostUSD)
		}
		if r.Error != "" {
			detail = strings.TrimPrefix(strings.Join([]string{r.Error, detail}, "; "), "; ")
			detail = strings.TrimSuffix(detail, "; -")
		}
		trigger := r.Trigger
		if trigger == schema.TriggerSchedule {
			trigger = ""
		}
		fmt.Fprintf(tw, "%s\trun %s\t%s\t%s\t%d\t%s\t%s\t%s\n", at, trigger, r.ID, localTime(j, r.ScheduledFor), r.Attempt, status, cost, detail)
	}
	return tw.Flush()
}
