package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// pairingRevokeOptions are the flags and arguments of `hermes pairing revoke`.
type pairingRevokeOptions struct {
	app  *app.Factory
	io   app.IOStreams
	user string
}

// pairingRevokeCmd is `hermes pairing revoke`.
func pairingRevokeCmd(g *app.Factory) *cobra.Command {
	opts := &pairingRevokeOptions{app: g}
	revoke := &cobra.Command{
		Use:   "revoke USER",
		Short: "Shut a paired user out again (USER or PLATFORM/USER)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.user = args[0]
			return runPairingRevoke(cmd.Context(), opts)
		},
	}
	return revoke
}

// runPairingRevoke runs `hermes pairing revoke`.
func runPairingRevoke(ctx context.Context, opts *pairingRevokeOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	p, err := gateway.LoadPairings(ctx, a.Store)
	if err != nil {
		return err
	}
	who, err := p.Revoke(ctx, a.Store, opts.user)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "revoked: %s user %s\n", who.Platform, who.User)
	return nil
}
