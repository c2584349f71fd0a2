package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/search"
)

// searchOptions are the flags and arguments of `hermes search`.
type searchOptions struct {
	app             *app.Factory
	io              app.IOStreams
	words           []string
	q               search.Query
	since, until    string
	asJSON, rebuild bool
}

func searchCmd(g *app.Factory) *cobra.Command {
	opts := &searchOptions{app: g}
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: `Search everything said to or by the agent: words (all required), OR, "phrases", prefix*, fuzzy~, -not, source:telegram role:user`,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.words = args[0:]
			return runSearch(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&opts.q.Limit, "limit", 10, "sessions to show")
	cmd.Flags().StringVar(&opts.q.Source, "source", "", "only this source (cli, telegram, ...)")
	cmd.Flags().StringVar(&opts.q.Role, "role", "", "only user, assistant or tool messages")
	cmd.Flags().StringVar(&opts.since, "since", "", "only messages on or after YYYY-MM-DD")
	cmd.Flags().StringVar(&opts.until, "until", "", "only messages on or before YYYY-MM-DD")
	cmd.Flags().BoolVar(&opts.rebuild, "rebuild", false, "drop the index and rebuild it from the events first")
	return cmd
}

// runSearch runs `hermes search`.
func runSearch(ctx context.Context, opts *searchOptions) error {
	// hermes search prefers tea: the words of one query
	opts.q.Text = strings.Join(opts.words, " ")
	opts.q.CountSessions = true
	if opts.since != "" {
		t, err := time.Parse("2006-01-02", opts.since)
		if err != nil {
			return fmt.Errorf("--since %q: use YYYY-MM-DD", opts.since)
		}
		opts.q.Since = t
	}
	if opts.until != "" {
		t, err := time.Parse("2006-01-02", opts.until)
		if err != nil {
			return fmt.Errorf("--until %q: use YYYY-MM-DD", opts.until)
		}
		opts.q.Until = t
	}
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	waiting := func() {
		fmt.Fprintln(opts.io.ErrOut, "waiting for the search index: another hermes process is using it")
	}
	return a.SearchIndex(ctx, opts.rebuild, waiting, func(idx *search.Index) error {
		res, err := idx.Search(ctx, opts.q)
		if err != nil {
			return err
		}
		if opts.asJSON {
			if res.Hits == nil {
				res.Hits = []search.Hit{}
			}
			// terminal colours are no use in JSON: <mark> as in HTML
			marks := strings.NewReplacer(search.HighlightOn, "<mark>", search.HighlightOff, "</mark>")
			for i := range res.Hits {
				res.Hits[i].Snippet = marks.Replace(res.Hits[i].Snippet)
			}
			return writeJSON(opts.io.Out, res)
		}
		out := opts.io.Out
		if len(res.Hits) == 0 {
			fmt.Fprintln(out, "no matches")
			return nil
		}
		fmt.Fprintf(out, "%d matching messages in %d sessions", res.Total, res.Sessions)
		if len(res.Hits) < res.Sessions {
			fmt.Fprintf(out, " (the best %d shown; --limit shows more)", len(res.Hits))
		}
		fmt.Fprint(out, "\n\n")
		colour := isTerminal(out) && os.Getenv("NO_COLOR") == ""
		for _, h := range res.Hits {
			snippet := strings.ReplaceAll(clip(h.Snippet, 300), "\n", " ")
			if !colour {
				snippet = strings.NewReplacer(search.HighlightOn, "", search.HighlightOff, "").Replace(snippet)
			} else if strings.Count(snippet, search.HighlightOn) > strings.Count(snippet, search.HighlightOff) {
				snippet += search.HighlightOff // clipped inside a highlight
			}
			fmt.Fprintf(out, "%s  %s  %s/%s  %d match(es)  score %.2f\n  %s\n\n", h.Session, h.Time.Local().Format(time.DateTime), h.Source, h.Role,
				h.Matches, h.Score, snippet)
		}
		for _, f := range []string{"source", "model", "month"} {
			var parts []string
			keys := make([]string, 0, len(res.Facets[f]))
			for k := range res.Facets[f] {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				ci, cj := res.Facets[f][keys[i]], res.Facets[f][keys[j]]
				return ci > cj || ci == cj && keys[i] < keys[j]
			})
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d", k, res.Facets[f][k]))
			}
			if len(parts) > 0 {
				fmt.Fprintf(out, "by %s: %s\n", f, strings.Join(parts, ", "))
			}
		}
		return nil
	})
}

// isTerminal tells whether w is a terminal (colours are for people, not
// for pipes and files).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
