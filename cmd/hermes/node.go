package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

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
	cmd.AddCommand(nodeRunCmd(g))
	return cmd
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
