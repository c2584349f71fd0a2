package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// nodeRunOptions are the flags and arguments of `hermes node run`.
type nodeRunOptions struct {
	app              *app.Factory
	io               app.IOStreams
	ov               config.Overrides
	etcdFlag, listen string
	metricsFlag      string
	drain            time.Duration
}

// nodeRunCmd is `hermes node run`.
func nodeRunCmd(g *app.Factory) *cobra.Command {
	opts := &nodeRunOptions{app: g}
	run := &cobra.Command{
		Use:   "run",
		Short: "Join the cluster and run the sessions it places here (Ctrl-C or SIGTERM leaves it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runNodeRun(cmd.Context(), opts)
		},
	}
	run.Flags().StringVar(&opts.etcdFlag, "cluster", "", "etcd client endpoints, host:port[,host:port] (default cluster.etcd in config.yaml)")
	run.Flags().StringVar(&opts.listen, "listen", "", "host:port of this node's cluster remote (default cluster.listen, else 127.0.0.1 on a free port)")
	run.Flags().DurationVar(&opts.drain, "drain-timeout", 30*time.Second, "on SIGTERM or Ctrl-C, how long turns running here may take to finish before the node leaves anyway")
	run.Flags().StringVar(&opts.metricsFlag, "metrics-listen", "", "serve Prometheus metrics at /metrics on host:port (default HERMES_METRICS_LISTEN, else telemetry.metrics_listen; neither: none)")
	run.Flags().StringVarP(&opts.ov.Model, "model", "m", "", "model name")
	run.Flags().StringVar(&opts.ov.Provider, "provider", "", "provider name")
	run.Flags().StringVar(&opts.ov.BaseURL, "base-url", "", "API base URL")
	run.Flags().StringVar(&opts.ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	return run
}

// runNodeRun runs `hermes node run`.
func runNodeRun(ctx context.Context, opts *nodeRunOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runNode(ctx, opts.app, opts.ov, opts.etcdFlag, opts.listen, opts.metricsFlag, opts.drain)
}

// runNode hosts session grains until ctx ends. The sessions run against
// the configured store, which every node and the gateway share (a
// postgres:// store: the embedded one is one process's).
func runNode(ctx context.Context, g *app.Factory, ov config.Overrides, etcdFlag, listen, metricsFlag string, drain time.Duration) error {
	// The asker is made before the session manager, which needs it, and
	// learns the store once the app is open.
	ask := &lateAsker{}
	c, err := newChatter(g, ov, ask)
	if err != nil {
		return err
	}
	defer c.Stop()
	stopTelemetry, err := startTelemetry(ctx, "hermes-node", c.File, metricsFlag, g.Log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	cfg, err := nodeConfig(c.App.Home, etcdFlag, listen)
	if err != nil {
		return err
	}
	cfg.Asker = node.NewAsker(c.App.Store)
	ask.set(cfg.Asker)
	if err := clusterStore(c.App); err != nil {
		return err
	}
	cl, err := node.Host(c.Sys, cfg, c.App.Store, c.Mgr, g.Log)
	if err != nil {
		return err
	}
	g.Log.Info().Str("address", cl.Address()).Msg("node running")
	fmt.Fprintf(os.Stderr, "hermes node: running at %s; Ctrl-C leaves the cluster\n", cl.Address())
	<-ctx.Done()
	// Drain first: no new turn starts here, the running ones finish (up
	// to drain), so that none is cut short and asked of the model again
	// by the session's next owner.
	fmt.Fprintf(os.Stderr, "hermes node: draining (up to %s), then leaving the cluster\n", drain)
	if left := cl.Drain(drain); left > 0 {
		fmt.Fprintf(os.Stderr, "hermes node: %d turns still running after %s: handed over\n", left, drain)
	}
	c.Mgr.Shutdown()
	cl.Leave()
	return nil
}
