package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingListOptions are the flags and arguments of `hermes pairing list`.
type pairingListOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// pairingListCmd is `hermes pairing list`.
func pairingListCmd(g *app.Factory) *cobra.Command {
	opts := &pairingListOptions{app: g}
	list := &cobra.Command{
		Use:   "list",
		Short: "Pending pairing codes and paired users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runPairingList(cmd.Context(), opts)
		},
	}
	return list
}

// runPairingList runs `hermes pairing list`.
func runPairingList(ctx context.Context, opts *pairingListOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	p, err := gateway.LoadPairings(ctx, a.Store)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(opts.io.Out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "STATE\tPLATFORM\tUSER\tNAME\tSINCE\tEXPIRES")
	for _, q := range p.Live(time.Now()) {
		fmt.Fprintf(w, "pending\t%s\t%s\t%s\t%s\t%s\n", q.Platform, q.User, q.UserName, q.Requested.Local().Format(time.DateTime), q.Expires.Local().Format(time.DateTime))
	}
	for _, a := range p.ApprovedList() {
		fmt.Fprintf(w, "paired\t%s\t%s\t%s\t%s\t\n", a.Platform, a.User, a.UserName, a.Since.Local().Format(time.DateTime))
	}
	return w.Flush()
}
