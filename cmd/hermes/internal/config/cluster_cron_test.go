package config

import (
	"strings"
	"testing"
	"time"
)

// HERMES_CRON_TIMEOUT over cron.timeout over the default; bad values name
// their key or variable.
func TestCronPrecedence(t *testing.T) {
	t.Setenv("HERMES_CRON_TIMEOUT", "")
	s, err := Cron(CronConfig{})
	if err != nil || s.Timeout != 10*time.Minute || !s.Wrap || s.AllowNested {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	if s, err = Cron(CronConfig{Timeout: "3m"}); err != nil || s.Timeout != 3*time.Minute {
		t.Fatalf("cron.timeout: %+v %v", s, err)
	}
	t.Setenv("HERMES_CRON_TIMEOUT", "90")
	if s, err = Cron(CronConfig{Timeout: "3m"}); err != nil || s.Timeout != 90*time.Second {
		t.Fatalf("HERMES_CRON_TIMEOUT over cron.timeout: %+v %v", s, err)
	}
	t.Setenv("HERMES_CRON_TIMEOUT", "")
	for _, c := range []struct {
		cfg  CronConfig
		want string
	}{
		{CronConfig{Timeout: "later"}, `cron.timeout "later"`},
		{CronConfig{MaxParallelJobs: -1}, "cron.max_parallel_jobs must not be negative"},
		{CronConfig{Timezone: "Mars/Olympus"}, `cron.timezone "Mars/Olympus"`},
	} {
		if _, err := Cron(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// --cluster and --listen over cluster: in config.yaml.
func TestClusterPrecedence(t *testing.T) {
	var c Config
	c.Cluster.Etcd = []string{"file:2379"}
	c.Cluster.Listen = "10.0.0.1:7000"
	n, err := Cluster(c, "", "")
	if err != nil || strings.Join(n.Etcd, ",") != "file:2379" || n.Host != "10.0.0.1" || n.Port != 7000 {
		t.Fatalf("config.yaml: %+v %v", n, err)
	}
	n, err = Cluster(c, "a:2379,b:2379", "127.0.0.1:7100")
	if err != nil || strings.Join(n.Etcd, ",") != "a:2379,b:2379" || n.Port != 7100 {
		t.Fatalf("flags over config.yaml: %+v %v", n, err)
	}
	if _, err := Cluster(Config{}, "", ""); err == nil || !strings.Contains(err.Error(), "--cluster") {
		t.Fatalf("no cluster: %v", err)
	}
	if _, err := Cluster(c, "", "nohostport"); err == nil || !strings.Contains(err.Error(), `cluster.listen "nohostport"`) {
		t.Fatalf("a bad --listen: %v", err)
	}
}
