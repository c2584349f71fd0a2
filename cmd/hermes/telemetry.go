package main

import (
	"context"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/telemetry"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// startTelemetry installs tracing and metrics for a long-running process
// (service names it): traces to telemetry.otlp_endpoint (or
// OTEL_EXPORTER_OTLP_ENDPOINT), metrics at /metrics on listen (the
// --metrics-listen flag, else HERMES_METRICS_LISTEN, else
// telemetry.metrics_listen). The returned stop flushes the spans left.
func startTelemetry(ctx context.Context, service string, file config.Config, listen string, log zerolog.Logger) (func(), error) {
	listen = first(listen, os.Getenv("HERMES_METRICS_LISTEN"), file.Telemetry.MetricsListen)
	cfg := telemetry.Config{Service: service, OTLPEndpoint: file.Telemetry.OTLPEndpoint, Version: versionLine()}
	if listen == "" && telemetry.TracesEndpoint(cfg) == "" {
		return func() {}, nil
	}
	t, err := telemetry.Setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if t.Tracing {
		log.Info().Str("endpoint", telemetry.TracesEndpoint(cfg)).Msg("traces exported over OTLP")
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	if listen != "" {
		go func() {
			defer close(served)
			if err := t.Serve(sctx, listen, log); err != nil {
				log.Error().Err(err).Msg("metrics")
			}
		}()
	} else {
		close(served)
	}
	return func() {
		cancel()
		<-served
		fctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := t.Shutdown(fctx); err != nil {
			log.Warn().Err(err).Msg("telemetry: flush at exit")
		}
	}, nil
}
