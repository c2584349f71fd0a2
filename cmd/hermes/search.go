package main

import (
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

func searchCmd(g *app.Factory) *cobra.Command {
	var q search.Query
	var since, until string
	var asJSON, rebuild bool
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: `Search everything said to or by the agent: words (all required), OR, "phrases", prefix*, fuzzy~, -not, source:telegram role:user`,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// hermes search prefers tea: the words of one query
			q.Text = strings.Join(args, " ")
			q.CountSessions = true
			if since != "" {
				t, err := time.Parse("2006-01-02", since)
				if err != nil {
					return fmt.Errorf("--since %q: use YYYY-MM-DD", since)
				}
				q.Since = t
			}
			if until != "" {
				t, err := time.Parse("2006-01-02", until)
				if err != nil {
					return fmt.Errorf("--until %q: use YYYY-MM-DD", until)
				}
				q.Until = t
			}
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			waiting := func() {
				fmt.Fprintln(cmd.ErrOrStderr(), "waiting for the search index: another hermes process is using it")
			}
			return a.SearchIndex(cmd.Context(), rebuild, waiting, func(idx *search.Index) error {
				res, err := idx.Search(cmd.Context(), q)
				if err != nil {
					return err
				}
				if asJSON {
					if res.Hits == nil {
						res.Hits = []search.Hit{}
					}
					// terminal colours are no use in JSON: <mark> as in HTML
					marks := strings.NewReplacer(search.HighlightOn, "<mark>", search.HighlightOff, "</mark>")
					for i := range res.Hits {
						res.Hits[i].Snippet = marks.Replace(res.Hits[i].Snippet)
					}
					return writeJSON(cmd.OutOrStdout(), res)
				}
				out := cmd.OutOrStdout()
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&q.Limit, "limit", 10, "sessions to show")
	cmd.Flags().StringVar(&q.Source, "source", "", "only this source (cli, telegram, ...)")
	cmd.Flags().StringVar(&q.Role, "role", "", "only user, assistant or tool messages")
	cmd.Flags().StringVar(&since, "since", "", "only messages on or after YYYY-MM-DD")
	cmd.Flags().StringVar(&until, "until", "", "only messages on or before YYYY-MM-DD")
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "drop the index and rebuild it from the events first")
	return cmd
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
