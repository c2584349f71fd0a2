package toolrun

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-go/hermes/actors/tool"
)

// Tool calls are traced and measured through the OpenTelemetry API: a
// span per call as the GenAI semantic conventions name it ("execute_tool
// {name}", gen_ai.tool.* attributes) and hermes.tool.duration by tool and
// outcome. A panicking tool's span ends with the runner (unrecorded).
var (
	tracer = otel.Tracer("github.com/hermes-go/hermes/actors/toolrun")
	meter  = otel.Meter("github.com/hermes-go/hermes/actors/toolrun")

	toolDuration, _ = meter.Float64Histogram("hermes.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call, by gen_ai.tool.name and hermes.outcome (ok, error, timeout, interrupted)"),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300))
)

func startToolSpan(ctx context.Context, c tool.Call) (context.Context, trace.Span) {
	return tracer.Start(ctx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Name),
		attribute.String("gen_ai.tool.call.id", c.ID),
	))
}

func endToolSpan(ctx context.Context, span trace.Span, c tool.Call, res *tool.Result) {
	outcome := "ok"
	switch {
	case res.Interrupted:
		outcome = "interrupted"
	case res.Err != "" && ctx.Err() == context.DeadlineExceeded:
		outcome = "timeout"
	case res.Err != "":
		outcome = "error"
	}
	if res.Err != "" {
		span.SetStatus(codes.Error, res.Err)
		span.SetAttributes(attribute.String("error.type", outcome))
	}
	span.End()
	toolDuration.Record(context.WithoutCancel(ctx), res.Duration.Seconds(), metric.WithAttributes(
		attribute.String("gen_ai.tool.name", c.Name), attribute.String("hermes.outcome", outcome)))
}
