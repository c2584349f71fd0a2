package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// clusterCertsOptions are the flags and arguments of `hermes cluster certs`.
type clusterCertsOptions struct {
	io    app.IOStreams
	dir   string
	names []string
	valid time.Duration
}

// clusterCertsCmd is `hermes cluster certs`.
func clusterCertsCmd(g *app.Factory) *cobra.Command {
	opts := &clusterCertsOptions{}
	cmd := &cobra.Command{
		Use:   "certs DIR NAME...",
		Short: "Make the cluster's CA (once) and a certificate and key for each member NAME in DIR",
		Long: `Makes DIR/ca.pem and DIR/ca-key.pem the first time, then DIR/NAME.pem and
DIR/NAME-key.pem for each NAME, signed by that CA. Give each member (nodes and
gateways) ca.pem and its own pair, set in its config.yaml:

  cluster:
    tls: {ca: ca.pem, cert: NAME.pem, key: NAME-key.pem}   # relative to the home

and keep ca-key.pem elsewhere: whoever holds it can make members.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.dir, opts.names = args[0], args[1:]
			return runClusterCerts(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.valid, "valid", 365*24*time.Hour, "how long the certificates are valid")
	return cmd
}

// runClusterCerts runs `hermes cluster certs`.
func runClusterCerts(_ context.Context, opts *clusterCertsOptions) error {
	if opts.valid <= 0 {
		return fmt.Errorf("--valid %s: want a positive duration", opts.valid)
	}
	if err := node.MakeCerts(opts.dir, opts.names, opts.valid); err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "CA: %s (keep %s off the members)\n", filepath.Join(opts.dir, "ca.pem"), filepath.Join(opts.dir, "ca-key.pem"))
	for _, n := range opts.names {
		n, hosts, _ := strings.Cut(n, "=") // NAME=host,… names a server's hosts
		if hosts != "" {
			hosts = " (for " + hosts + ")"
		}
		fmt.Fprintf(opts.io.Out, "%s%s: %s, %s\n", n, hosts, filepath.Join(opts.dir, n+".pem"), filepath.Join(opts.dir, n+"-key.pem"))
	}
	return nil
}
