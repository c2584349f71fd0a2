package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// reviewListOptions are the flags of `hermes review list`.
type reviewListOptions struct {
	app    *app.Factory
	io     app.IOStreams
	asJSON bool
}

// reviewListCmd is `hermes review list`.
func reviewListCmd(g *app.Factory) *cobra.Command {
	opts := &reviewListOptions{app: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the background reviews, oldest first: the session they read, how they ended and what they learned",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runReviewList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	return cmd
}

// runReviewList runs `hermes review list`.
func runReviewList(ctx context.Context, opts *reviewListOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	all, err := review.List(ctx, a.Store)
	if err != nil {
		return err
	}
	if opts.asJSON {
		enc := json.NewEncoder(opts.io.Out)
		enc.SetIndent("", "  ")
		if all == nil {
			all = []*review.Entry{}
		}
		return enc.Encode(all)
	}
	if len(all) == 0 {
		fmt.Fprintln(opts.io.Out, "no background reviews yet")
		return nil
	}
	w := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REVIEW\tSTARTED\tSESSION\tSTATUS\tCOST\tNOTE")
	for _, e := range all {
		status, note, cost := "running", "", ""
		if f := e.Finished; f != nil {
			status, note, cost = f.Status, f.Note, fmt.Sprintf("$%.4f", f.CostUSD)
		}
		if e.Undone != nil {
			status += ", undone"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", short(e.ReviewID), e.Time.Local().Format("2006-01-02 15:04"), short(e.SessionID), status, cost, note)
	}
	return w.Flush()
}
