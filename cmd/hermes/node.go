package main

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events/postgres"
)

func nodeCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "An agent node: a cluster member that runs sessions for gateways in cluster mode"}
	cmd.AddCommand(nodeRunCmd(g))
	return cmd
}

// nodeConfig resolves the cluster settings: flags over home's config.yaml
// (see config.Cluster).
func nodeConfig(home, etcdFlag, listenFlag string) (node.Config, error) {
	fc, err := config.Load(home)
	if err != nil {
		return node.Config{}, err
	}
	s, err := config.Cluster(fc, etcdFlag, listenFlag)
	cfg := node.Config{Name: s.Name, Etcd: s.Etcd, Host: s.Host, Port: s.Port}
	if t := s.TLS; t != nil {
		// Relative paths are the home's.
		abs := func(p string) string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(home, p)
		}
		cfg.TLS = &node.TLSFiles{CA: abs(t.CA), Cert: abs(t.Cert), Key: abs(t.Key)}
	}
	return cfg, err
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

// busTLS is the TLS configuration of the gateway's NATS bus from
// gateway.bus_tls (nil when none is set).
func busTLS(home string, t config.ClusterTLS) (*tls.Config, error) {
	if t.CA == "" && t.Cert == "" && t.Key == "" {
		return nil, nil
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(home, p)
	}
	tc, err := node.TLSFiles{CA: abs(t.CA), Cert: abs(t.Cert), Key: abs(t.Key)}.ClientTLS()
	if err != nil {
		return nil, fmt.Errorf("gateway.bus_tls: %w", err)
	}
	return tc, nil
}
