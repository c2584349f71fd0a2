package gateway

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
	"github.com/hermes-go/hermes/actors/session"
)

// A turn the router runs is a span ("gateway turn", the trace's root for
// a chat message) that the session's turn joins, here or on a cluster
// member; hermes.gateway.turns counts turns by platform and outcome.
var (
	tracer = otel.Tracer("github.com/hermes-go/hermes/actors/gateway")
	meter  = otel.Meter("github.com/hermes-go/hermes/actors/gateway")

	turnsCounter, _ = meter.Int64Counter("hermes.gateway.turns", metric.WithUnit("{turn}"),
		metric.WithDescription("Turns the gateway ran, by hermes.platform and hermes.outcome (ok, error, interrupted)"))
	turnTime, _ = meter.Float64Histogram("hermes.gateway.turn.duration", metric.WithUnit("s"),
		metric.WithDescription("From a message's turn starting to its answer, by hermes.platform"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800))
)

type gwSpan struct {
	trace.Span
	began time.Time
}

func startTurnSpan(ctx context.Context, platform string, w *work) (context.Context, gwSpan) {
	ctx, span := tracer.Start(ctx, "gateway turn", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("hermes.platform", platform),
		attribute.String("hermes.session.id", w.msg.SessionID),
		attribute.String("hermes.turn.id", w.msg.TurnID),
	))
	return ctx, gwSpan{Span: span, began: time.Now()}
}

func endTurnSpan(ctx context.Context, s gwSpan, platform string, res session.TurnResult) {
	outcome := "ok"
	switch {
	case errors.Is(res.Err, agent.ErrInterrupted):
		outcome = "interrupted"
	case res.Err != nil:
		outcome = "error"
		s.RecordError(res.Err)
		s.SetStatus(codes.Error, res.Err.Error())
	}
	s.SetAttributes(attribute.String("hermes.outcome", outcome))
	s.End()
	attrs := metric.WithAttributes(attribute.String("hermes.platform", platform), attribute.String("hermes.outcome", outcome))
	ctx = context.WithoutCancel(ctx)
	turnsCounter.Add(ctx, 1, attrs)
	turnTime.Record(ctx, time.Since(s.began).Seconds(), attrs)
}
