// Package telemetry installs the OpenTelemetry SDK behind the API the
// actors use (go.opentelemetry.io/otel): traces exported over OTLP/HTTP to
// a collector when one is configured, and metrics served in the Prometheus
// text format. Without Setup the API's no-op implementations stay in place
// and instrumentation costs next to nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config says what to install.
type Config struct {
	// Service names the process in traces and metrics (service.name):
	// hermes-gateway, hermes-node, hermes.
	Service string
	// OTLPEndpoint is the collector's OTLP/HTTP base URL
	// (http://host:4318); "" takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT from the environment, and without
	// either no traces are exported.
	OTLPEndpoint string
	// Version is the build's version (service.version).
	Version string
}

// Telemetry is the installed SDK.
type Telemetry struct {
	tp  *sdktrace.TracerProvider
	mp  *sdkmetric.MeterProvider
	reg *prometheus.Registry
	// Tracing says whether traces are exported.
	Tracing bool
}

// TracesEndpoint is the collector traces go to under cfg ("" for none).
func TracesEndpoint(cfg Config) string {
	if cfg.OTLPEndpoint != "" {
		return cfg.OTLPEndpoint
	}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}

// Setup installs the SDK as the process's global providers: a meter
// provider whose metrics Handler serves, and, when a collector is
// configured, a tracer provider exporting to it in batches, with the W3C
// trace-context propagator.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", cfg.Service), attribute.String("service.version", cfg.Version)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t := &Telemetry{reg: prometheus.NewRegistry()}
	t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(t.reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	otel.SetMeterProvider(t.mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if ep := TracesEndpoint(cfg); ep != "" {
		var opts []otlptracehttp.Option
		if cfg.OTLPEndpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(cfg.OTLPEndpoint+"/v1/traces"))
		}
		te, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter for %s: %w", ep, err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(te, sdktrace.WithBatchTimeout(2*time.Second)), sdktrace.WithResource(res))
		otel.SetTracerProvider(t.tp)
		t.Tracing = true
	}
	return t, nil
}

// Gauge registers an observable gauge read from f at each scrape.
func Gauge(name, unit, desc string, f func() int64) error {
	_, err := otel.Meter("github.com/hermes-go/hermes").Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(f())
			return nil
		}))
	return err
}

// Handler serves the metrics in the Prometheus text format.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{})
}

// Serve serves Handler at /metrics on addr until ctx ends.
func (t *Telemetry) Serve(ctx context.Context, addr string, log zerolog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", t.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info().Str("address", ln.Addr().String()).Msg("metrics served at /metrics")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown flushes the spans not exported yet and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
