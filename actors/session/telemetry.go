package session

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-go/hermes/actors/agent"
)

// A turn is traced as the GenAI conventions' agent invocation
// ("invoke_agent hermes"), under the span its Turn names (the gateway's,
// a cluster caller's), so that its model calls and tool calls are its
// children; hermes.turn.duration measures it by outcome.
var (
	tracer = otel.Tracer("github.com/hermes-go/hermes/actors/session")
	meter  = otel.Meter("github.com/hermes-go/hermes/actors/session")

	turnDuration, _ = meter.Float64Histogram("hermes.turn.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a session's turn, by hermes.outcome (ok, error, interrupted) and hermes.depth (0: the session's own, n: a subagent n levels down)"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800))
)

type turnSpan struct {
	trace.Span
	began time.Time
	depth int
}

func (a *Actor) startTurnSpan(ctx context.Context, t *Turn, turnID string) (context.Context, turnSpan) {
	if t.Trace.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, t.Trace)
	}
	ctx, span := tracer.Start(ctx, "invoke_agent hermes", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "hermes"),
		attribute.String("gen_ai.conversation.id", a.id),
		attribute.String("hermes.turn.id", turnID),
		attribute.Int("hermes.depth", a.depth),
	))
	return ctx, turnSpan{Span: span, began: time.Now(), depth: a.depth}
}

func endTurnSpan(ctx context.Context, s turnSpan, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, agent.ErrInterrupted):
		outcome = "interrupted"
	case err != nil:
		outcome = "error"
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
	s.SetAttributes(attribute.String("hermes.outcome", outcome))
	s.End()
	turnDuration.Record(context.WithoutCancel(ctx), time.Since(s.began).Seconds(), metric.WithAttributes(
		attribute.String("hermes.outcome", outcome), attribute.Int("hermes.depth", s.depth)))
}
