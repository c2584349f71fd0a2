package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// gatewayRunOptions are the flags and arguments of `hermes gateway run`.
type gatewayRunOptions struct {
	app                              *app.Factory
	io                               app.IOStreams
	ov                               config.Overrides
	clusterFlag, listenFlag, busFlag string
	metricsFlag                      string
}

// gatewayRunCmd is `hermes gateway run`.
func gatewayRunCmd(g *app.Factory) *cobra.Command {
	opts := &gatewayRunOptions{app: g}
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the gateway in the foreground (Ctrl-C or SIGTERM drains and stops it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runGatewayRun(cmd.Context(), opts)
		},
	}
	run.Flags().StringVar(&opts.busFlag, "bus", "", "the bus between the platforms and the gateway: gochannel (in-process) or nats://host:port (default GATEWAY_BUS, else gateway.bus in config.yaml)")
	run.Flags().StringVar(&opts.clusterFlag, "cluster", "", "run turns on the cluster's agent nodes (hermes node run): etcd client endpoints, host:port[,host:port] (default cluster.etcd in config.yaml; neither: turns run here)")
	run.Flags().StringVar(&opts.listenFlag, "listen", "", "with --cluster: host:port of the gateway's cluster remote, reachable by the nodes (default cluster.listen, else 127.0.0.1 on a free port)")
	run.Flags().StringVar(&opts.metricsFlag, "metrics-listen", "", "serve Prometheus metrics at /metrics on host:port (default HERMES_METRICS_LISTEN, else telemetry.metrics_listen; neither: none)")
	run.Flags().StringVarP(&opts.ov.Model, "model", "m", "", "model name")
	run.Flags().StringVar(&opts.ov.Provider, "provider", "", "provider name")
	run.Flags().StringVar(&opts.ov.BaseURL, "base-url", "", "API base URL")
	run.Flags().StringVar(&opts.ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	return run
}

// runGatewayRun runs `hermes gateway run`.
func runGatewayRun(ctx context.Context, opts *gatewayRunOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runGateway(ctx, opts.app, opts.ov, opts.clusterFlag, opts.listenFlag, opts.metricsFlag, func(s *gatewaySettings) error {
		if opts.busFlag != "" {
			s.Bus = opts.busFlag
		}
		return nil
	})
}
