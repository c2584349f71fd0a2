package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// gatewayRunCmd is `hermes gateway run`.
func gatewayRunCmd(g *app.Factory) *cobra.Command {
	var ov config.Overrides
	var clusterFlag, listenFlag, busFlag string
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the gateway in the foreground (Ctrl-C or SIGTERM drains and stops it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runGateway(ctx, g, ov, clusterFlag, listenFlag, func(s *gatewaySettings) error {
				if busFlag != "" {
					s.Bus = busFlag
				}
				return nil
			})
		},
	}
	run.Flags().StringVar(&busFlag, "bus", "", "the bus between the platforms and the gateway: gochannel (in-process) or nats://host:port (default GATEWAY_BUS, else gateway.bus in config.yaml)")
	run.Flags().StringVar(&clusterFlag, "cluster", "", "run turns on the cluster's agent nodes (hermes node run): etcd client endpoints, host:port[,host:port] (default cluster.etcd in config.yaml; neither: turns run here)")
	run.Flags().StringVar(&listenFlag, "listen", "", "with --cluster: host:port of the gateway's cluster remote, reachable by the nodes (default cluster.listen, else 127.0.0.1 on a free port)")
	run.Flags().StringVar(&ov.Model, "model", "", "model name")
	run.Flags().StringVar(&ov.Provider, "provider", "", "provider name")
	run.Flags().StringVar(&ov.BaseURL, "base-url", "", "API base URL")
	run.Flags().StringVar(&ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	return run
}
