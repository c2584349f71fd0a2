package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `hermes gateway status` shows the cluster's coordinator warning when the
// gateway reported one (etcd away: turns run on the last membership), and
// no warning line when there is none.
func TestGatewayStatusShowsClusterWarning(t *testing.T) {
	for _, tc := range []struct{ warning, want string }{
		{"etcd unreachable since 21:40:03: serving on the last known membership (3 members)", "  warning: etcd unreachable since 21:40:03"},
		{"", ""},
	} {
		home := t.TempDir()
		st := gatewayStatus{PID: os.Getpid(), Started: time.Now(), Updated: time.Now(), Bus: "nats",
			Cluster: &clusterReport{Etcd: []string{"127.0.0.1:2379"}, Address: "127.0.0.1:7000", Members: []string{"127.0.0.1:7001"}, Warning: tc.warning}}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(home, "gateway"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "gateway", "status.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := printGatewayStatus(&out, home, false); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if !strings.Contains(got, "cluster: 1 agent node(s)") {
			t.Fatalf("no cluster in:\n%s", got)
		}
		if tc.want == "" && strings.Contains(got, "warning:") {
			t.Fatalf("a warning without one reported:\n%s", got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Fatalf("want %q in:\n%s", tc.want, got)
		}
	}
}
