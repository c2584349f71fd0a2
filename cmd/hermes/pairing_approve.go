package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingApproveOptions are the flags and arguments of `hermes pairing approve`.
type pairingApproveOptions struct {
	app  *app.Factory
	io   app.IOStreams
	code string
}

// pairingApproveCmd is `hermes pairing approve`.
func pairingApproveCmd(g *app.Factory) *cobra.Command {
	opts := &pairingApproveOptions{app: g}
	approve := &cobra.Command{
		Use:   "approve CODE",
		Short: "Let in the user a pairing code was given to",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.code = args[0]
			return runPairingApprove(cmd.Context(), opts)
		},
	}
	return approve
}

// runPairingApprove runs `hermes pairing approve`.
func runPairingApprove(ctx context.Context, opts *pairingApproveOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	p, err := gateway.LoadPairings(ctx, a.Store)
	if err != nil {
		return err
	}
	who, err := p.Approve(ctx, a.Store, opts.code, time.Now())
	if err != nil {
		return err
	}
	name := who.User
	if who.UserName != "" {
		name += " (" + who.UserName + ")"
	}
	fmt.Fprintf(opts.io.Out, "paired: %s user %s\n", who.Platform, name)
	return nil
}
