package stream_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
)

// get fetches srv's answer through Guard, as the SDKs' middleware does,
// under a Watch unless bare.
func get(t *testing.T, h http.HandlerFunc, bare bool) (*http.Response, *stream.Watch, error) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, w := stream.Start(context.Background(), nil)
	if bare {
		ctx, w = context.Background(), nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := stream.Guard(req, http.DefaultClient.Do)
	if resp != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, w, err
}

func body(ct, b string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		io.WriteString(w, b)
	}
}

func TestGuardPassesEventsAndDropsComments(t *testing.T) {
	in := "data: {\"a\":1}\n\n: ping\r\n\r\nevent: x\ndata: {\"b\":[1,2]}\n\n: ping\n\ndata: [DONE]\n\n"
	resp, w, err := get(t, body("text/event-stream; charset=utf-8", in), false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := "data: {\"a\":1}\n\nevent: x\ndata: {\"b\":[1,2]}\n\ndata: [DONE]\n\n"
	if string(got) != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	if !w.Opened() || !w.Done() {
		t.Fatalf("opened %v done %v", w.Opened(), w.Done())
	}
}

func TestGuardRejectsWhatIsNotAStream(t *testing.T) {
	cases := map[string]struct{ ct, body, want string }{
		"proxy page":  {"text/html", "<html><head><title>Gateway login</title></head><body>Sign in</body></html>", "text/html"},
		"json answer": {"application/json", `{"choices":[{"message":{"content":"hi"}}]}`, "application/json"},
		"empty":       {"text/plain", "", "(empty body)"},
		"no type":     {"", "Bad Gateway", "Bad Gateway"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, w, err := get(t, body(c.ct, c.body), false)
			if !errors.Is(err, model.ErrMalformedStream) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "instead of an event stream") {
				t.Fatalf("error %v", err)
			}
			if w.Opened() {
				t.Fatal("a non-stream body counted as an opened stream")
			}
		})
	}
}

// TestGuardAcceptsUnlabelledStream: a server that forgets the content type
// but sends SSE is still read.
func TestGuardAcceptsUnlabelledStream(t *testing.T) {
	resp, _, err := get(t, body("text/plain", "\ndata: {}\n\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "data: {}\n\n" {
		t.Fatalf("body %q", b)
	}
}

func TestGuardBounds(t *testing.T) {
	many := "[" + strings.Repeat("{},", stream.MaxEventValues) + "{}]"
	cases := map[string]struct{ body, want string }{
		"endless line":     {"data: " + strings.Repeat("x", stream.MaxEventBytes+10), "SSE line over"},
		"endless event":    {strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 17), "SSE event over"},
		"value blow-up":    {"data: {\"choices\":" + many + "}\n\n", "JSON values"},
		"values per event": {strings.Repeat("data: [1,2,3,4,5,6,7,8,9]\n", stream.MaxEventValues/8+1), "JSON values"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resp, _, err := get(t, body("text/event-stream", c.body), false)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			if !errors.Is(err, model.ErrMalformedStream) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v", err)
			}
		})
	}
	// Commas inside strings are not values; many events of many values
	// each are fine.
	ok := strings.Repeat("data: {\"s\":\""+strings.Repeat(",", 3*stream.MaxEventValues)+"\"}\n\n", 3) +
		strings.Repeat("data: "+many[:len(many)/4]+"\n\n", 3)
	resp, _, err := get(t, body("text/event-stream", ok), false)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(len(ok)) {
		t.Fatalf("read %d of %d: %v", n, len(ok), err)
	}
}

func TestGuardBoundsErrorBodies(t *testing.T) {
	resp, _, err := get(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		for range 3 {
			w.Write(make([]byte, stream.MaxErrorBodyBytes))
		}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n != stream.MaxErrorBodyBytes {
		t.Fatalf("read %d bytes of an error body", n)
	}
}

// TestGuardLeavesOtherRequests: without Start, a successful body is not
// touched (no content check, no wrapping).
func TestGuardLeavesOtherRequests(t *testing.T) {
	resp, _, err := get(t, body("application/json", `{"ok":true}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != `{"ok":true}` {
		t.Fatalf("body %q", b)
	}
}

func TestBudgetAndIndex(t *testing.T) {
	var b stream.Budget
	if err := b.Text(stream.MaxResponseBytes); err != nil {
		t.Fatal(err)
	}
	if err := b.Text(1); !errors.Is(err, model.ErrMalformedStream) {
		t.Fatalf("over the byte budget: %v", err)
	}
	for range stream.MaxToolCalls {
		if err := b.Call(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Call(); !errors.Is(err, model.ErrMalformedStream) {
		t.Fatalf("over the call budget: %v", err)
	}
	for _, i := range []int64{-1, 128, 999999999, 1 << 62} {
		if err := stream.Index("tool-call index", i, stream.MaxToolCalls); !errors.Is(err, model.ErrMalformedStream) {
			t.Errorf("index %d: %v", i, err)
		}
	}
	if err := stream.Index("tool-call index", 127, stream.MaxToolCalls); err != nil {
		t.Fatal(err)
	}
}

func TestRecovered(t *testing.T) {
	if stream.Recovered("p", nil) != nil {
		t.Fatal("no panic, yet an error")
	}
	err := stream.Recovered("p", "index out of range [-1]")
	if model.Classify(err) != model.ClassMalformed || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("%v classified %s", err, model.Classify(err))
	}
}
