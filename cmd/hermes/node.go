package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events/postgres"
)

// nodeConfig resolves the cluster settings: flags over config.yaml.
func nodeConfig(home, etcdFlag, listenFlag string) (node.Config, error) {
	fc, err := config.Load(home)
	if err != nil {
		return node.Config{}, err
	}
	cc := fc.Cluster
	if etcdFlag != "" {
		cc.Etcd = strings.Split(etcdFlag, ",")
	}
	if listenFlag != "" {
		cc.Listen = listenFlag
	}
	if len(cc.Etcd) == 0 {
		return node.Config{}, errors.New("no cluster: pass --cluster host:port[,host:port] (etcd's client endpoints) or set cluster.etcd in config.yaml")
	}
	cfg := node.Config{Name: cc.Name, Etcd: cc.Etcd, Host: "127.0.0.1"}
	if cc.Listen != "" {
		host, port, err := net.SplitHostPort(cc.Listen)
		if err != nil {
			return node.Config{}, fmt.Errorf("cluster.listen %q: want host:port: %w", cc.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return node.Config{}, fmt.Errorf("cluster.listen %q: bad port", cc.Listen)
		}
		cfg.Host, cfg.Port = host, p
	}
	return cfg, nil
}

func nodeCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "An agent node: a cluster member that runs sessions for gateways in cluster mode"}
	var ov config.Overrides
	var etcdFlag, listen string
	run := &cobra.Command{
		Use:   "run",
		Short: "Join the cluster and run the sessions it places here (Ctrl-C or SIGTERM leaves it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runNode(ctx, g, ov, etcdFlag, listen)
		},
	}
	run.Flags().StringVar(&etcdFlag, "cluster", "", "etcd client endpoints, host:port[,host:port] (default cluster.etcd in config.yaml)")
	run.Flags().StringVar(&listen, "listen", "", "host:port of this node's cluster remote (default cluster.listen, else 127.0.0.1 on a free port)")
	run.Flags().StringVar(&ov.Model, "model", "", "model name")
	run.Flags().StringVar(&ov.Provider, "provider", "", "provider name")
	run.Flags().StringVar(&ov.BaseURL, "base-url", "", "API base URL")
	run.Flags().StringVar(&ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	cmd.AddCommand(run)
	return cmd
}

// runNode hosts session grains until ctx ends. The sessions run against
// the configured store, which every node and the gateway share (a
// postgres:// store: the embedded one is one process's).
func runNode(ctx context.Context, g *app.Factory, ov config.Overrides, etcdFlag, listen string) error {
	// The asker is made before the session manager, which needs it, and
	// learns the store once the app is open.
	ask := &lateAsker{}
	c, err := newChatter(g, ov, ask)
	if err != nil {
		return err
	}
	defer c.stop()
	cfg, err := nodeConfig(c.a.Home, etcdFlag, listen)
	if err != nil {
		return err
	}
	cfg.Asker = node.NewAsker(c.a.Store)
	ask.set(cfg.Asker)
	if err := clusterStore(c.a); err != nil {
		return err
	}
	cl, err := node.Host(c.sys, cfg, c.a.Store, c.mgr, g.Log)
	if err != nil {
		return err
	}
	g.Log.Info().Str("address", cl.Address()).Msg("node running")
	fmt.Fprintf(os.Stderr, "hermes node: running at %s; Ctrl-C leaves the cluster\n", cl.Address())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "hermes node: leaving the cluster")
	c.mgr.Shutdown()
	cl.Leave()
	return nil
}

// clusterStore refuses a cluster over a store that is not PostgreSQL: the
// members must share one log, and the session leases and the projections'
// leases are locks in that database.
func clusterStore(a *app.App) error {
	if _, ok := a.Store.(*postgres.Store); ok {
		return nil
	}
	return fmt.Errorf("a cluster needs a PostgreSQL store that every member shares (--store postgres://…, HERMES_STORE or store: in config.yaml); the store is %s", a.Spec)
}
