package node

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestTraceCrossesInARequest: a turn's span context survives the request's
// JSON to the member that runs it; no span sends nothing, and a garbled
// header gives no span rather than a wrong one.
func TestTraceCrossesInARequest(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
	raw, err := json.Marshal(request{Op: "turn", ID: "t1", Trace: injectTrace(sc)})
	if err != nil {
		t.Fatal(err)
	}
	var got request
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	back := extractTrace(got.Trace)
	if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || !back.IsSampled() || !back.IsRemote() {
		t.Fatalf("sent %v, the member read %v (from %v)", sc, back, got.Trace)
	}
	if h := injectTrace(trace.SpanContext{}); h != nil {
		t.Fatalf("no span sent %v", h)
	}
	if extractTrace(map[string]string{"traceparent": "00-garbage-01"}).IsValid() {
		t.Fatal("a garbled traceparent gave a span")
	}
}
