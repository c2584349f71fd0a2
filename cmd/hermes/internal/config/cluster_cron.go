package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
)

// CronSettings is the cron: section after defaults and the environment.
type CronSettings struct {
	// MaxParallel bounds the runs at once; Retention is how many output
	// files a job keeps (-1: all).
	MaxParallel, Retention int
	// Wrap puts the job's name above delivered answers; AllowNested lets
	// runs create jobs.
	Wrap, AllowNested bool
	// Timeout bounds a run, ScriptTimeout its script (0: the run's),
	// AckTimeout the wait for a delivery's outcome.
	Timeout, ScriptTimeout time.Duration
	AckTimeout             time.Duration
	// DeliveryAttempts and HandOver: cron.Config's.
	DeliveryAttempts int
	HandOver         time.Duration
	// Timezone is the zone of new jobs' schedules ("": the machine's).
	Timezone string
}

// Cron is the cron: section c with the defaults, and HERMES_CRON_TIMEOUT
// over cron.timeout.
func Cron(c CronConfig) (CronSettings, error) {
	s := CronSettings{MaxParallel: c.MaxParallelJobs, Retention: cron.DefaultRetention, Wrap: c.WrapResponse == nil || *c.WrapResponse,
		AllowNested: c.AllowNested, Timeout: cron.DefaultTimeout, AckTimeout: cron.DefaultAckTimeout, Timezone: c.Timezone}
	if c.MaxParallelJobs < 0 {
		return s, fmt.Errorf("cron.max_parallel_jobs must not be negative, got %d", c.MaxParallelJobs)
	}
	s.DeliveryAttempts, s.HandOver = cron.DefaultDeliveryAttempts, cron.DefaultHandOver
	if c.DeliveryAttempts < 0 {
		return s, fmt.Errorf("cron.delivery_attempts must not be negative, got %d", c.DeliveryAttempts)
	}
	if c.DeliveryAttempts > 0 {
		s.DeliveryAttempts = c.DeliveryAttempts
	}
	if c.HandOver != "" {
		d, err := time.ParseDuration(c.HandOver)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("cron.delivery_handover %q: use a duration such as 10m", c.HandOver)
		}
		s.HandOver = d
	}
	if c.OutputRetention != nil {
		s.Retention = *c.OutputRetention
		if s.Retention <= 0 {
			s.Retention = -1 // keep all
		}
	}
	if c.ScriptTimeoutSeconds < 0 {
		return s, fmt.Errorf("cron.script_timeout_seconds must not be negative, got %d", c.ScriptTimeoutSeconds)
	}
	s.ScriptTimeout = time.Duration(c.ScriptTimeoutSeconds) * time.Second
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("cron.timeout %q: use a duration such as 10m", c.Timeout)
		}
		s.Timeout = d
	}
	if v := os.Getenv("HERMES_CRON_TIMEOUT"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs <= 0 {
			return s, fmt.Errorf("HERMES_CRON_TIMEOUT %q: give seconds, such as 600", v)
		}
		s.Timeout = time.Duration(secs * float64(time.Second))
	}
	if c.DeliveryTimeout != "" {
		d, err := time.ParseDuration(c.DeliveryTimeout)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("cron.delivery_timeout %q: use a duration such as 2m", c.DeliveryTimeout)
		}
		s.AckTimeout = d
	}
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			return s, fmt.Errorf("cron.timezone %q: use an IANA name such as Europe/Berlin", c.Timezone)
		}
	}
	return s, nil
}

// ClusterSettings are where this process meets the cluster: etcd's
// endpoints, the cluster's name, and the host and port its cluster remote
// listens on (port 0: any free one).
type ClusterSettings struct {
	Name string
	Etcd []string
	Host string
	Port int
	// TLS is the remote's mutual TLS files, nil for plain gRPC.
	TLS *ClusterTLS
}

// Cluster is the cluster settings: the flags --cluster (etcdFlag, comma
// separated) and --listen over c's cluster: section.
func Cluster(c Config, etcdFlag, listenFlag string) (ClusterSettings, error) {
	cc := c.Cluster
	if etcdFlag != "" {
		cc.Etcd = strings.Split(etcdFlag, ",")
	}
	if listenFlag != "" {
		cc.Listen = listenFlag
	}
	if len(cc.Etcd) == 0 {
		return ClusterSettings{}, errors.New("no cluster: pass --cluster host:port[,host:port] (etcd's client endpoints) or set cluster.etcd in config.yaml")
	}
	cfg := ClusterSettings{Name: cc.Name, Etcd: cc.Etcd, Host: "127.0.0.1"}
	if t := cc.TLS; t != (ClusterTLS{}) {
		if t.CA == "" || t.Cert == "" || t.Key == "" {
			return ClusterSettings{}, errors.New("cluster.tls needs ca, cert and key (hermes cluster certs makes them)")
		}
		cfg.TLS = &t
	}
	if cc.Listen != "" {
		host, port, err := net.SplitHostPort(cc.Listen)
		if err != nil {
			return ClusterSettings{}, fmt.Errorf("cluster.listen %q: want host:port: %w", cc.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return ClusterSettings{}, fmt.Errorf("cluster.listen %q: bad port", cc.Listen)
		}
		cfg.Host, cfg.Port = host, p
	}
	return cfg, nil
}
