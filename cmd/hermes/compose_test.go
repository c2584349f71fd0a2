package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeStartsInOrder reads docker-compose.yml and the Dockerfile
// (no Docker engine runs on the project's machines): every service
// restarts when it exits, every dependency waited on as healthy has a
// health check, the nodes and the gateway wait for their store, etcd and
// bus to be healthy, the API server is published with a key required,
// and the image's home belongs to its user before it becomes a volume.
func TestComposeStartsInOrder(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Restart     string         `yaml:"restart"`
			Healthcheck map[string]any `yaml:"healthcheck"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Profiles    []string          `yaml:"profiles"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for name, s := range c.Services {
		if s.Restart != "unless-stopped" && s.Restart != "always" {
			t.Errorf("service %s: restart %q: it stays down after it exits", name, s.Restart)
		}
		for dep, d := range s.DependsOn {
			if d.Condition != "service_healthy" {
				t.Errorf("service %s waits for %s only to start (%q)", name, dep, d.Condition)
			}
			if c.Services[dep].Healthcheck == nil {
				t.Errorf("service %s waits for %s to be healthy, which has no health check", name, dep)
			}
		}
	}
	for _, n := range []string{"node1", "node2", "node3", "gateway"} {
		s := c.Services[n]
		for _, dep := range []string{"postgres", "etcd"} {
			if _, ok := s.DependsOn[dep]; !ok {
				t.Errorf("%s does not wait for %s", n, dep)
			}
		}
		if s.Healthcheck == nil {
			t.Errorf("%s has no health check", n)
		}
	}
	gw := c.Services["gateway"]
	if _, ok := gw.DependsOn["nats"]; !ok || !slices.Contains(gw.Ports, "8642:8642") || gw.Environment["API_SERVER_ENABLED"] != "true" ||
		!strings.HasPrefix(gw.Environment["API_SERVER_KEY"], "${API_SERVER_KEY:?") {
		t.Errorf("gateway: depends_on %v, ports %v, environment %v", gw.DependsOn, gw.Ports, gw.Environment)
	}
	if !slices.Contains(c.Services["eventstore"].Profiles, "eventstore") {
		t.Error("eventstore starts with every `docker compose up`: nothing there uses it")
	}
	df, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	d := string(df)
	chown, volume := strings.Index(d, "chown hermes:hermes /home/hermes/.hermes"), strings.Index(d, "VOLUME /home/hermes/.hermes")
	if chown < 0 || volume < 0 || chown > volume {
		t.Error("the Dockerfile does not give the home to the hermes user before declaring it a volume")
	}
}
