package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/llm/stream"
)

// rawServer answers every request with exactly body, as an event stream.
func rawServer(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + "}]}\n\n"
}

// call makes one chat call and returns what it gave, the text streamed, and
// the bytes allocated meanwhile.
func call(t *testing.T, p model.Provider) (model.Response, error, string, uint64) {
	t.Helper()
	var streamed strings.Builder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := p.Complete(context.Background(), model.Request{Model: "m", Messages: history}, func(d model.Delta) {
		if d.Kind == model.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	runtime.ReadMemStats(&after)
	return resp, err, streamed.String(), after.TotalAlloc - before.TotalAlloc
}

func wantClass(t *testing.T, err error, class model.ErrorClass, text string) {
	t.Helper()
	if got := model.Classify(err); got != class || !strings.Contains(fmt.Sprint(err), text) {
		t.Fatalf("error %v classified %s, want %s mentioning %q", err, got, class, text)
	}
}

// TestChatHostileToolIndex: a tool-call index from the wire sizes nothing.
// Before the bound, -1 panicked and 999999999 grew the process to 24 GB.
func TestChatHostileToolIndex(t *testing.T) {
	for _, idx := range []string{"-1", "128", "1000000", "999999999", "9223372036854775807"} {
		t.Run(idx, func(t *testing.T) {
			body := chunk(`{"role":"assistant","content":""}`, "") +
				chunk(`{"tool_calls":[{"index":`+idx+`,"id":"call_x","type":"function","function":{"name":"terminal","arguments":"{}"}}]}`, "") +
				chunk(`{}`, "tool_calls") + "data: [DONE]\n\n"
			resp, err, _, alloc := call(t, openai.NewChat(openai.Options{BaseURL: rawServer(t, body)}))
			wantClass(t, err, model.ClassMalformed, "tool-call index "+idx)
			if resp.ToolCalls != nil || alloc > 32<<20 {
				t.Fatalf("response %+v after %d MB allocated", resp, alloc>>20)
			}
		})
	}
	// The last index allowed works, through llmtest's injection as well.
	srv := llmtest.New(llmtest.Reply{Content: "ok", Inject: chunk(`{"tool_calls":[{"index":127,"id":"call_y","type":"function","function":{"name":"terminal","arguments":"{}"}}]}`, "")})
	defer srv.Close()
	resp, err, _, _ := call(t, openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}))
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_y" {
		t.Fatalf("%+v %v", resp, err)
	}
}

// TestChatCutStream: a stream that ends before finish_reason and [DONE],
// cleanly or by a dropped connection, is an error, never an answer. Before,
// "The capital of Fra" came back with finish_reason stop.
func TestChatCutStream(t *testing.T) {
	cases := map[string]llmtest.Reply{
		"one chunk then close": {CutAfter: 1},
		"cut mid-answer":       {CutAfter: 2},
		"connection dropped":   {CutAfter: 2, Reset: true},
		"no terminator":        {NoTerminator: true},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			r.Content = "The capital of France is Paris."
			srv := llmtest.New(r)
			defer srv.Close()
			resp, err, streamed, _ := call(t, openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}))
			wantClass(t, err, model.ClassStreamCut, "stream was cut")
			if resp.Content != "" || resp.FinishReason != "" {
				t.Fatalf("a cut stream gave %+v", resp)
			}
			if r.CutAfter == 2 && streamed != "The capita" {
				t.Fatalf("streamed %q before the cut", streamed)
			}
		})
	}
}

// TestChatTerminators: either terminator suffices; some servers send only
// one of them.
func TestChatTerminators(t *testing.T) {
	for name, body := range map[string]string{
		"finish_reason only": chunk(`{"content":"Paris."}`, "stop"),
		"[DONE] only":        chunk(`{"content":"Paris."}`, "") + "data: [DONE]\n\n",
		"both, CRLF":         strings.ReplaceAll(chunk(`{"content":"Paris."}`, "stop")+"data: [DONE]\n\n", "\n", "\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			resp, err, _, _ := call(t, openai.NewChat(openai.Options{BaseURL: rawServer(t, body)}))
			if err != nil || resp.Content != "Paris." || resp.FinishReason != "stop" {
				t.Fatalf("%+v %v", resp, err)
			}
		})
	}
}

// TestChatNotAStream: a 200 whose body is a proxy's page or a JSON answer
// is malformed, with the start of the body in the message. Before, it was
// an empty answer.
func TestChatNotAStream(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{Body: "<html><head><title>Corporate proxy: sign in</title></head></html>"},
		llmtest.Reply{Body: `{"choices":[]}`, ContentType: "application/json"})
	defer srv.Close()
	p := openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"})
	_, err, _, _ := call(t, p)
	wantClass(t, err, model.ClassMalformed, "text/html; charset=utf-8 instead of an event stream")
	if !strings.Contains(err.Error(), "Corporate proxy: sign in") {
		t.Fatalf("the page is not quoted: %v", err)
	}
	_, err, _, _ = call(t, p)
	wantClass(t, err, model.ClassMalformed, "application/json instead of an event stream")
}

// TestChatEndlessStreams: keep-alives alone, or a byte now and then, trip
// the stall watchdog; real but empty chunks keep it quiet, and the call's
// own deadline ends them.
func TestChatEndlessStreams(t *testing.T) {
	cases := map[string]struct {
		r     llmtest.Reply
		class model.ErrorClass
		text  string
	}{
		"pings":        {llmtest.Reply{PingEvery: 10 * time.Millisecond}, model.ClassTimeout, "stalled"},
		"byte trickle": {llmtest.Reply{Content: "slow", ByteEvery: 5 * time.Millisecond}, model.ClassTimeout, "stalled"},
		"empty chunks": {llmtest.Reply{TrickleEvery: 10 * time.Millisecond}, model.ClassCallTimeout, "deadline (400ms)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(c.r)
			defer srv.Close()
			start := time.Now()
			_, err, _, _ := call(t, openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1", StallTimeout: 200 * time.Millisecond, CallTimeout: 400 * time.Millisecond}))
			wantClass(t, err, c.class, c.text)
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	}
}

func TestChatBounds(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	many := strings.Repeat(`{},`, stream.MaxEventValues)
	cases := map[string]struct{ body, text string }{
		"content over the budget": {strings.Repeat(chunk(`{"content":"`+mib+`"}`, ""), 5) + chunk(`{}`, "stop"), "over 4194304 bytes"},
		"arguments over the budget": {strings.Repeat(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+mib+`"}}]}`, ""), 5) +
			chunk(`{}`, "stop"), "over 4194304 bytes"},
		"endless tool name": {chunk(`{"tool_calls":[{"index":0,"function":{"name":"`+strings.Repeat("n", 2000)+`"}}]}`, "") + chunk(`{}`, "stop"), "tool name over 1024"},
		"model name":        {strings.Replace(chunk(`{}`, "stop"), `"model":"m"`, `"model":"`+strings.Repeat("m", 2000)+`"`, 1), "model name of 2000 bytes"},
		"value blow-up":     {chunk(`{"tool_calls":[`+many+`{}]}`, ""), "JSON values"},
		"not JSON":          {"data: {\"choices\":[\n\n", "not valid JSON"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err, _, alloc := call(t, openai.NewChat(openai.Options{BaseURL: rawServer(t, c.body)}))
			wantClass(t, err, model.ClassMalformed, c.text)
			if alloc > 256<<20 {
				t.Fatalf("%d MB allocated", alloc>>20)
			}
		})
	}
}

// TestPanicBecomesError: a panic under Complete (here the delta callback
// stands in for the SDK's decoder) fails the call, not the process.
func TestPanicBecomesError(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "boom"}, llmtest.Reply{Content: "boom"})
	defer srv.Close()
	for _, p := range []model.Provider{openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}), openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1"})} {
		resp, err := p.Complete(context.Background(), model.Request{Model: "m", Messages: history}, func(model.Delta) { panic("decoder exploded") })
		wantClass(t, err, model.ClassMalformed, "decoder exploded")
		if resp.Content != "" {
			t.Fatalf("%+v", resp)
		}
	}
}

// TestResponsesCutStream: without response.completed there is no answer,
// whatever deltas came before.
func TestResponsesCutStream(t *testing.T) {
	for name, r := range map[string]llmtest.Reply{
		"cut mid-answer":     {CutAfter: 3},
		"connection dropped": {CutAfter: 3, Reset: true},
		"no terminator":      {NoTerminator: true},
	} {
		t.Run(name, func(t *testing.T) {
			r.Content = "The capital of France is Paris."
			srv := llmtest.New(r)
			defer srv.Close()
			resp, err, streamed, _ := call(t, openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1"}))
			wantClass(t, err, model.ClassStreamCut, "stream was cut")
			if resp.Content != "" || streamed == "" {
				t.Fatalf("response %+v, streamed %q", resp, streamed)
			}
		})
	}
}

func TestResponsesBounds(t *testing.T) {
	var calls []string
	for i := range stream.MaxToolCalls + 1 {
		calls = append(calls, fmt.Sprintf(`{"type":"function_call","id":"fc_%d","call_id":"call_%d","name":"terminal","arguments":"{}","status":"completed"}`, i, i))
	}
	completed := func(output string) string {
		return `event: response.completed` + "\n" + `data: {"type":"response.completed","sequence_number":1,"response":{"id":"r","object":"response","created_at":1,"model":"m","status":"completed","output":[` +
			output + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}}` + "\n\n"
	}
	delta := `event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":0,"item_id":"m","output_index":0,"content_index":0,"delta":"` + strings.Repeat("x", 1<<20) + `"}` + "\n\n"
	for name, c := range map[string]struct{ body, text string }{
		"129 tool calls":      {completed(strings.Join(calls, ",")), "more than 128 tool calls"},
		"deltas over budget":  {strings.Repeat(delta, 5) + completed(""), "over 4194304 bytes"},
		"endless tool name":   {completed(`{"type":"function_call","id":"f","call_id":"c","name":"` + strings.Repeat("n", 2000) + `","arguments":"{}"}`), "tool name of 2000"},
		"proxy page (no SSE)": {"<!doctype html><title>502</title>", "instead of an event stream"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if strings.HasPrefix(c.body, "<") {
					w.Header().Set("Content-Type", "text/html")
				}
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			_, err, _, _ := call(t, openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1"}))
			wantClass(t, err, model.ClassMalformed, c.text)
		})
	}
	// At the bound, the answer goes through.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, completed(strings.Join(calls[:stream.MaxToolCalls], ",")))
	}))
	defer srv.Close()
	resp, err, _, _ := call(t, openai.NewResponses(openai.Options{BaseURL: srv.URL + "/v1"}))
	if err != nil || len(resp.ToolCalls) != stream.MaxToolCalls {
		t.Fatalf("%d calls, %v", len(resp.ToolCalls), err)
	}
}
