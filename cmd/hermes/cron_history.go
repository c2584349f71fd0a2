package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// cronHistoryCmd is `hermes cron history`.
func cronHistoryCmd(g *app.Factory) *cobra.Command {
	var histJSON bool
	history := &cobra.Command{Use: "history ID", Short: "A job's changes, runs (how each ended, where it was delivered) and missed slots", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openCronHome(g)
			if err != nil {
				return err
			}
			defer h.a.Close()
			j, err := h.jobs.Find(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rs, err := h.jobs.Events(cmd.Context(), j.ID)
			if err != nil {
				return err
			}
			entries, err := cron.History(rs)
			if err != nil {
				return err
			}
			if histJSON {
				return writeJSON(cmd.OutOrStdout(), entries)
			}
			return printHistory(cmd.OutOrStdout(), j, entries)
		}}
	history.Flags().BoolVar(&histJSON, "json", false, "JSON output")
	return history
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
		status, cost, detail := r.Status, "", r.Deliveries()
		if !r.Finished {
			status = "running"
		}
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
