package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/search"
)

// searchIndex opens the search index (its file lock admits one process at
// a time: retried briefly), brings it up to date, and runs fn.
func (a *app) searchIndex(ctx context.Context, rebuild bool, fn func(*search.Index) error) error {
	path := filepath.Join(a.home, "search.bleve")
	var idx *search.Index
	var err error
	for i := 0; i < 50; i++ {
		if idx, err = search.Open(path); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	defer idx.Close()
	run := projections.NewRunner(a.store, a.log, idx)
	if rebuild {
		if err := run.Rebuild(ctx, ""); err != nil {
			return err
		}
	} else if _, err := run.CatchUp(ctx); err != nil {
		return err
	}
	return fn(idx)
}

func searchCmd(g *globals) *cobra.Command {
	var q search.Query
	var since string
	var asJSON, rebuild bool
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: `Search everything said to or by the agent: words, "phrases", prefix*, fuzzy~, +must -not, source:telegram role:user`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Text = args[0]
			if since != "" {
				t, err := time.Parse("2006-01-02", since)
				if err != nil {
					return fmt.Errorf("--since %q: use YYYY-MM-DD", since)
				}
				q.Since = t
			}
			a, err := g.open()
			if err != nil {
				return err
			}
			defer a.Close()
			return a.searchIndex(cmd.Context(), rebuild, func(idx *search.Index) error {
				res, err := idx.Search(cmd.Context(), q)
				if err != nil {
					return err
				}
				if asJSON {
					if res.Hits == nil {
						res.Hits = []search.Hit{}
					}
					return writeJSON(cmd.OutOrStdout(), res)
				}
				out := cmd.OutOrStdout()
				if len(res.Hits) == 0 {
					fmt.Fprintln(out, "no matches")
					return nil
				}
				fmt.Fprintf(out, "%d matching messages in %d sessions\n\n", res.Total, len(res.Hits))
				for _, h := range res.Hits {
					fmt.Fprintf(out, "%s  %s  %s/%s  %d match(es)  score %.2f\n  %s\n\n", h.Session, h.Time.Local().Format(time.DateTime), h.Source, h.Role,
						h.Matches, h.Score, strings.ReplaceAll(clip(h.Snippet, 300), "\n", " "))
				}
				for _, f := range []string{"source", "model", "month"} {
					var parts []string
					for k, v := range res.Facets[f] {
						parts = append(parts, fmt.Sprintf("%s %d", k, v))
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
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "drop the index and rebuild it from the events first")
	return cmd
}
