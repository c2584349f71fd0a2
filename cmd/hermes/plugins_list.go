package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pluginsListOptions are the flags of `hermes plugins list`.
type pluginsListOptions struct {
	app    *app.Factory
	io     app.IOStreams
	asJSON bool
}

func pluginsListCmd(g *app.Factory) *cobra.Command {
	opts := &pluginsListOptions{app: g}
	cmd := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the installed plugins: on or off, where from, pinned to what, what they register and need, and whether their files still match", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runPluginsList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	return cmd
}

// pluginRow is one plugin in `hermes plugins list --json`.
type pluginRow struct {
	plugins.Plugin
	// Intact says whether its files still hash to what was pinned.
	Intact bool `json:"intact"`
}

// runPluginsList runs `hermes plugins list`.
func runPluginsList(ctx context.Context, opts *pluginsListOptions) error {
	return withBook(opts.app, func(_ *app.App, b *plugins.Book) error {
		all, _, err := b.List(ctx)
		if err != nil {
			return err
		}
		rows := make([]pluginRow, 0, len(all))
		for _, p := range all {
			h, err := plugins.Hash(p.Dir)
			rows = append(rows, pluginRow{Plugin: p, Intact: err == nil && h == p.Hash})
		}
		if opts.asJSON {
			enc := json.NewEncoder(opts.io.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		if len(rows) == 0 {
			fmt.Fprintln(opts.io.Out, "No plugins installed: hermes plugins install DIR|GIT-URL (see the README's Plugins section).")
			return nil
		}
		tw := tabwriter.NewWriter(opts.io.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tPINNED\tREGISTERS\tNEEDS\tSOURCE")
		for _, r := range rows {
			state := "on"
			if !r.Enabled {
				state = "off"
			}
			if !r.Intact {
				state += " (files changed: not started)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, dash(r.Version), state, pinLine(r.Plugin), registers(r.Plugin), needs(r.Plugin), r.Source)
		}
		return tw.Flush()
	})
}
