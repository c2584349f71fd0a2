package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// modelListOptions are the flags of `hermes model list`.
type modelListOptions struct {
	app      *app.Factory
	io       app.IOStreams
	provider string
}

// modelListCmd is `hermes model list`.
func modelListCmd(g *app.Factory) *cobra.Command {
	opts := &modelListOptions{app: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the providers this build knows, or with --provider one provider's models (context window, price)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			return runModelList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.provider, "provider", "", "list this provider's models")
	return cmd
}

// runModelList runs `hermes model list`.
func runModelList(ctx context.Context, opts *modelListOptions) error {
	w := tabwriter.NewWriter(opts.io.Out, 2, 4, 2, ' ', 0)
	if opts.provider == "" {
		fmt.Fprintln(w, "PROVIDER\tNAME\tAPI\tKEY\tMODELS")
		for _, p := range catalog.All() {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", p.ID, p.Label, p.Mode, keyStatus(p), len(p.Models))
		}
		return w.Flush()
	}
	p, ok := catalog.Lookup(opts.provider)
	if !ok {
		return catalog.UnknownError("--provider", opts.provider)
	}
	fmt.Fprintf(opts.io.Out, "%s (%s): %s, base URL %s, key %s\n", p.Label, p.ID, p.Mode, orDash(p.BaseURL), orDash(keyStatus(p)))
	if len(p.Models) == 0 {
		fmt.Fprintf(opts.io.Out, "no models listed: any model the server offers can be named (hermes model set %s/NAME)\n", p.ID)
		return nil
	}
	fmt.Fprintln(w, "MODEL\tCONTEXT\tINPUT $/Mtok\tOUTPUT $/Mtok")
	for i, m := range p.Models {
		ctx, in, out := "unknown", "unknown", "unknown"
		if m.Window > 0 {
			ctx = tokensShort(m.Window)
		}
		if m.Price != nil {
			in, out = dollars(m.Price.Input), dollars(m.Price.Output)
		}
		id := m.ID
		if i == 0 {
			id += " (default)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", id, ctx, in, out)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if strings.Contains(keyStatus(p), "✓") || !p.NeedsKey() {
		return nil
	}
	fmt.Fprintf(opts.io.Out, "set %s to use it\n", p.KeyVars())
	return nil
}
