package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// hooksRevokeOptions are the arguments of `hermes hooks revoke`.
type hooksRevokeOptions struct {
	app     *app.Factory
	io      app.IOStreams
	command string
}

func hooksRevokeCmd(g *app.Factory) *cobra.Command {
	opts := &hooksRevokeOptions{app: g}
	return &cobra.Command{
		Use: "revoke COMMAND", Aliases: []string{"remove", "rm"}, Short: "Forget the approvals of a hook command: it is asked about again", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.command = ioOf(cmd), args[0]
			return runHooksRevoke(opts)
		},
	}
}

// runHooksRevoke runs `hermes hooks revoke`.
func runHooksRevoke(opts *hooksRevokeOptions) error {
	_, _, consent, err := hooksSetup(opts.app)
	if err != nil {
		return err
	}
	n, err := consent.Revoke(opts.command)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no approval of %q: `hermes hooks list` shows the commands", opts.command)
	}
	fmt.Fprintf(opts.io.Out, "Removed %d approvals of %s; a running chat keeps its hooks until it restarts.\n", n, opts.command)
	return nil
}
