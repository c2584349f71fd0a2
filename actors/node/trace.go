package node

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace context carries a turn's span from its caller to the member
// that runs it.
var traceContext = propagation.TraceContext{}

// injectTrace is sc as W3C trace-context headers (nil when sc is not a
// span).
func injectTrace(sc trace.SpanContext) map[string]string {
	if !sc.IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier
}

// extractTrace reads the span injectTrace sent (invalid when none came).
func extractTrace(h map[string]string) trace.SpanContext {
	if len(h) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier(h)))
}
