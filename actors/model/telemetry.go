package model

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Model calls are traced and measured through the OpenTelemetry API: a
// span per call named and described as the GenAI semantic conventions
// say ("chat {model}", gen_ai.* attributes), the call's duration and its
// token usage as the conventions' client metrics. Without an SDK installed
// (cmd/hermes installs one when asked) they cost next to nothing.
var (
	tracer = otel.Tracer("github.com/hermes-go/hermes/actors/model")
	meter  = otel.Meter("github.com/hermes-go/hermes/actors/model")

	callDuration, _ = meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a model call, retries and fallbacks included"),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
	tokenUsage, _ = meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens a model call used, by gen_ai.token.type (input, output)"),
		metric.WithExplicitBucketBoundaries(16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576))
)

// Complete implements Provider: the ladder's call (complete), traced and
// measured.
func (l *Ladder) Complete(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	ctx, span := tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", req.Model),
		attribute.Int("hermes.request.messages", len(req.Messages)),
		attribute.Int("hermes.request.tools", len(req.Tools)),
	))
	began := time.Now()
	resp, err := l.complete(ctx, req, onDelta)
	provider := l.Name()
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", req.Model),
	}
	if resp.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", resp.Model))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", string(Classify(err))))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}),
			attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
			attribute.Int("hermes.response.tool_calls", len(resp.ToolCalls)),
		)
	}
	span.SetAttributes(attrs...)
	span.End()
	set := metric.WithAttributes(attrs...)
	callDuration.Record(ctx, time.Since(began).Seconds(), set)
	if err == nil {
		tokenUsage.Record(ctx, resp.Usage.PromptTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
		tokenUsage.Record(ctx, resp.Usage.CompletionTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
	}
	return resp, err
}
