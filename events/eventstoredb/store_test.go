package eventstoredb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
)

// TestContract runs the store contract against a real EventStoreDB named
// by HERMES_ESDB_URL (for example esdb://127.0.0.1:2113?tls=false from
// `docker compose up eventstore`). No EventStoreDB server can run where
// this project is built (no package, no Docker), so without the variable
// the suite is skipped, under CI too.
func TestContract(t *testing.T) {
	url := os.Getenv("HERMES_ESDB_URL")
	if url == "" {
		t.Skip("HERMES_ESDB_URL is not set: no EventStoreDB server to run the contract suite against (none can run on this build machine)")
	}
	run := time.Now().UnixNano()
	n := 0
	open := func(t *testing.T, prefix string) events.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := Open(ctx, url, WithStreamPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.Run(t, func(t *testing.T) events.Store {
		// Each case gets its own streams on the shared server.
		n++
		return open(t, fmt.Sprintf("hermes-test-%d-%d-", run, n))
	}, storetest.Features{
		// The same streams, opened again through a new client.
		Reopen: func(t *testing.T, s events.Store) events.Store { return open(t, s.(*Store).prefix) },
		Shared: true,
	})
}

func TestExpectedRevisionMapping(t *testing.T) {
	for _, tc := range []struct {
		in   events.Expected
		want esdb.ExpectedRevision
	}{
		{events.Any, esdb.Any{}},
		{events.NoStream, esdb.NoStream{}},
		{events.StreamExists, esdb.StreamExists{}},
		{events.Exact(0), esdb.Revision(0)},
		{events.Exact(41), esdb.Revision(41)},
	} {
		if got := expectedOf(tc.in); got != tc.want {
			t.Errorf("%s maps to %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, in := range []string{
		"esdb://admin:changeit@localhost:2113?tls=false",
		"esdb+discover://admin:changeit@node1:2113,node2:2113?tls=true",
	} {
		got := Redact(in)
		if strings.Contains(got, "changeit") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

func TestBadConnectionStringDoesNotLeakPassword(t *testing.T) {
	_, err := Open(context.Background(), "esdb://admin:changeit@localhost:2113?tls=maybe")
	if err == nil || strings.Contains(err.Error(), "changeit") {
		t.Fatalf("error %v", err)
	}
}

// TestKurrentDBConnectionStrings: KurrentDB's names for the connection
// string parse as the esdb ones do (the client knows only those); others
// are refused.
func TestKurrentDBConnectionStrings(t *testing.T) {
	for _, c := range []struct{ dsn, host string }{
		{"kurrentdb://admin:changeit@db.example:2113?tls=false", "db.example:2113"},
		{"kurrentdb+discover://db.example:2113?tls=false", "db.example:2113"},
		{"kdb://db.example:2113?tls=false", "db.example:2113"},
		{"esdb://db.example:2113?tls=false", "db.example:2113"},
	} {
		cfg, err := ParseConnectionString(c.dsn)
		if err != nil {
			t.Fatalf("%s: %v", c.dsn, err)
		}
		if cfg.Address != c.host && (len(cfg.GossipSeeds) == 0 || cfg.GossipSeeds[0].String() != c.host) {
			t.Fatalf("%s: address %q seeds %v", c.dsn, cfg.Address, cfg.GossipSeeds)
		}
	}
	if _, err := ParseConnectionString("mysql://db.example"); err == nil {
		t.Fatal("a mysql:// string parsed")
	}
}
