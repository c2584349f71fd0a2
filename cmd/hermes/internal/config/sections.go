package config

// CronConfig is the cron: section of config.yaml. provider, chronos,
// mirror_delivery and session_db_timeout_seconds are the Python Hermes
// Agent's keys: accepted so that one config.yaml serves both, unused here.
type CronConfig struct {
	// MaxParallelJobs bounds the runs at once (default 4).
	MaxParallelJobs int `yaml:"max_parallel_jobs"`
	// OutputRetention is how many output files a job keeps (default 50;
	// 0 or less keeps all).
	OutputRetention *int `yaml:"output_retention"`
	// WrapResponse puts the job's name above delivered answers (default on).
	WrapResponse *bool `yaml:"wrap_response"`
	// ScriptTimeoutSeconds bounds a job's script (0: the run's timeout).
	ScriptTimeoutSeconds int `yaml:"script_timeout_seconds"`
	// Timeout bounds a run whose job sets none (default 10m;
	// HERMES_CRON_TIMEOUT in seconds overrides it).
	Timeout string `yaml:"timeout"`
	// Timezone is the zone of new jobs' schedules (default: the machine's).
	Timezone string `yaml:"timezone"`
	// AllowNested lets a job's runs create jobs (default off).
	AllowNested bool `yaml:"allow_nested"`
	// DeliveryTimeout bounds the wait for a platform's delivery outcome
	// (default 2m).
	DeliveryTimeout string `yaml:"delivery_timeout"`
	// DeliveryAttempts bounds the attempts of a platform delivery that
	// fails for a passing reason (default 3; 1: no retry).
	DeliveryAttempts int `yaml:"delivery_attempts"`
	// HandOver is how long a delivery to a platform the scheduler's
	// process does not run waits for a gateway that runs it (default 10m).
	HandOver string `yaml:"delivery_handover"`

	Provider                string         `yaml:"provider"`
	Chronos                 map[string]any `yaml:"chronos"`
	MirrorDelivery          bool           `yaml:"mirror_delivery"`
	SessionDBTimeoutSeconds int            `yaml:"session_db_timeout_seconds"`
}

// ClusterConfig is the cluster: section of config.yaml: where agent nodes
// and a gateway in cluster mode find each other.
type ClusterConfig struct {
	// Etcd lists etcd's client endpoints (host:port): the cluster provider.
	Etcd []string `yaml:"etcd"`
	// Name is the cluster's name (default hermes).
	Name string `yaml:"name"`
	// Listen is where this process's cluster remote listens (default
	// 127.0.0.1:0, any free port; members advertise it through etcd).
	Listen string `yaml:"listen"`
	// TLS makes the cluster remote speak mutual TLS (hermes cluster certs
	// makes the files): every member and gateway presents a certificate
	// of the cluster's CA and refuses peers that do not.
	TLS ClusterTLS `yaml:"tls"`
}

// ClusterTLS names the PEM files of this process in a cluster with TLS:
// the cluster CA's certificate, and this member's certificate and key
// (relative paths are taken from the home).
type ClusterTLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// TelemetryConfig is the telemetry: section.
type TelemetryConfig struct {
	// MetricsListen is host:port where `gateway run` and `node run` serve
	// Prometheus metrics at /metrics (HERMES_METRICS_LISTEN; "" serves
	// none). The metrics carry no secrets, but bind loopback or a private
	// network: nothing asks for a key there.
	MetricsListen string `yaml:"metrics_listen"`
	// OTLPEndpoint is an OpenTelemetry collector's OTLP/HTTP base URL
	// (http://collector:4318) that traces go to; "" takes
	// OTEL_EXPORTER_OTLP_ENDPOINT from the environment, and without it no
	// traces are sent.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
}
