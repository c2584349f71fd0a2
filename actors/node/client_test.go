package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/events/postgres"
)

// caller is the test's side of a cluster: the store, and sessions reached
// through a client member of cluster "t".
type caller struct {
	store    *postgres.Store
	client   *node.Cluster
	sessions *node.Sessions
}

// newCaller opens the store at dsn and joins cluster "t" through etcd as a
// client, once members agent nodes are in its topology; its sessions
// answer completed turns from the store.
func newCaller(t *testing.T, dsn, etcd string, members int) *caller {
	t.Helper()
	log := testLog()
	store, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sys := actors.NewSystem(log)
	client, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd}, Poll: time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Leave(); sys.Shutdown() })
	gatewaytest.WaitFor(t, fmt.Sprintf("%d node(s) in the client's topology", members), func() bool { return len(client.Members()) == members })
	s := node.NewSessions(client)
	s.Store = store
	return &caller{store: store, client: client, sessions: s}
}
