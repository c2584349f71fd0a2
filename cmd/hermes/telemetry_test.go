package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// otlpSpan is what the test's collector keeps of a span.
type otlpSpan struct {
	name, trace, id, parent string
	attrs                   map[string]string
}

// otlpReceiver is an OTLP/HTTP collector endpoint: it decodes what
// exporters POST to /v1/traces with the protocol's own protobuf types.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
	bad   []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		o.bad = append(o.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if err := proto.Unmarshal(body, &req); err != nil {
		o.bad = append(o.bad, err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{name: s.Name, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
				for _, a := range s.Attributes {
					sp.attrs[a.Key] = a.Value.String()
				}
				for _, a := range rs.Resource.Attributes {
					sp.attrs["resource."+a.Key] = a.Value.String()
				}
				o.spans = append(o.spans, sp)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

func (o *otlpReceiver) named(prefix string) []otlpSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []otlpSpan
	for _, s := range o.spans {
		if strings.HasPrefix(s.name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestGatewayTracesAndMetrics runs `hermes gateway run` with the API
// server, Prometheus metrics on --metrics-listen and traces to an OTLP
// collector: one turn with a tool call is one trace — the gateway's turn,
// the session's invoke_agent under it, the model calls and the tool call
// under that, with the GenAI attributes — and the metrics count it.
func TestGatewayTracesAndMetrics(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_t1", Name: "todo", Args: `{"todos":[{"id":"1","content":"trace it","status":"pending"}]}`}}, Prompt: 30, Completion: 7},
		llmtest.Reply{Content: "Traced.", Prompt: 50, Completion: 3})
	defer srv.Close()
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	home := t.TempDir()
	port, mport := freePort(t), freePort(t)
	cmd := exec.Command(bin, "--home", home, "gateway", "run", "--model", "gpt-4o-mini", "--metrics-listen", "127.0.0.1:"+strconv.Itoa(mport))
	cmd.Env = chatEnv(srv, "API_SERVER_ENABLED=true", "API_SERVER_KEY=k-test-0123456789abcdef", "API_SERVER_PORT="+strconv.Itoa(port),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not come up:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"hermes-agent","messages":[{"role":"user","content":"plan it"}]}`))
	req.Header.Set("Authorization", "Bearer k-test-0123456789abcdef")
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Traced.") {
		t.Fatalf("completion: %d %s", resp.StatusCode, body)
	}
	mresp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`hermes_gateway_turns_total{hermes_outcome="ok",hermes_platform="api"`,
		`gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o-mini"`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o-mini",gen_ai_response_model="gpt-4o-mini",gen_ai_token_type="input"} 80`,
		`hermes_tool_duration_seconds_count{gen_ai_tool_name="todo",hermes_outcome="ok"`,
		`hermes_turn_duration_seconds_count{hermes_depth="0",hermes_outcome="ok"`,
		"hermes_gateway_active_turns",
		"go_goroutines",
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("metrics:\n%s", metrics)
	}
	// The spans are flushed as the gateway stops.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway did not stop:\n%s", stderr.String())
	}
	gwTurn, agentSpans, chats, tools := recv.named("gateway turn"), recv.named("invoke_agent hermes"), recv.named("chat gpt-4o-mini"), recv.named("execute_tool todo")
	if len(gwTurn) != 1 || len(agentSpans) != 1 || len(chats) != 2 || len(tools) != 1 || len(recv.bad) > 0 {
		t.Fatalf("spans: %d gateway turn, %d invoke_agent, %d chat, %d execute_tool; bad requests %v\nall: %+v", len(gwTurn), len(agentSpans), len(chats), len(tools), recv.bad, recv.spans)
	}
	root, ag := gwTurn[0], agentSpans[0]
	if ag.trace != root.trace || ag.parent != root.id || root.attrs["hermes.platform"] == "" || !strings.Contains(root.attrs["resource.service.name"], "hermes-gateway") {
		t.Fatalf("invoke_agent %+v is not under the gateway's turn %+v", ag, root)
	}
	for _, s := range append(chats, tools...) {
		if s.trace != root.trace || s.parent != ag.id {
			t.Fatalf("span %s (%s, parent %s) is not under invoke_agent %s", s.name, s.trace, s.parent, ag.id)
		}
	}
	if !strings.Contains(chats[0].attrs["gen_ai.usage.input_tokens"], "30") || !strings.Contains(chats[1].attrs["gen_ai.usage.input_tokens"], "50") && !strings.Contains(chats[0].attrs["gen_ai.usage.input_tokens"], "50") ||
		!strings.Contains(chats[0].attrs["gen_ai.provider.name"], "openai") || !strings.Contains(tools[0].attrs["gen_ai.tool.call.id"], "call_t1") {
		t.Fatalf("GenAI attributes: %+v %+v", chats, tools)
	}
}
