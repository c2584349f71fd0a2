package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

const (
	benchChats = 1000
	modelDelay = 50 * time.Millisecond
)

// wave sends one request per chat at once and returns each one's latency.
func wave(b *testing.B, c *http.Client, url, key string, bodies [][]byte, headers []string) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, len(bodies))
	sessions := make([]string, len(bodies))
	var wg sync.WaitGroup
	errs := make(chan error, len(bodies))
	start := make(chan struct{})
	for i := range bodies {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(bodies[i]))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			if headers != nil && headers[i] != "" {
				req.Header.Set(apiserver.SessionHeader, headers[i])
			}
			t0 := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat[i] = time.Since(t0)
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
				return
			}
			sessions[i] = resp.Header.Get(apiserver.SessionHeader)
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if headers != nil {
		copy(headers, sessions)
	}
	return lat
}

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func heap() uint64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkConcurrentChats: 1,000 chats at once through the API server,
// the router and the session actors, against a model that takes 50 ms.
// Baseline in the same run: the same 1,000 requests straight to the model
// server. Each op is one wave of 1,000 new chats, then one wave continuing
// them (X-Hermes-Session-Id). Reported: turns/s, p50/p99 latency beside
// the model's own, the latency of one chat at a time (no queueing), and
// the heap an idle session keeps.
//
//	go test -run '^$' -bench ConcurrentChats -benchtime 1x ./adapters/gateway/apiserver/
func BenchmarkConcurrentChats(b *testing.B) {
	r := newRig(b, nil, func(o *apiserver.Options) { o.Key = "" })
	r.llm.NoRecord = true
	r.llm.SetDefault(llmtest.Reply{Content: "ok", Delay: modelDelay, Prompt: 10, Completion: 1})
	c := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConns: 2 * benchChats, MaxIdleConnsPerHost: 2 * benchChats}}
	bodies := make([][]byte, benchChats)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"model":"hermes-agent","messages":[{"role":"user","content":"chat %d"}]}`, i)
	}
	// Baseline: the model server alone, same concurrency.
	base := wave(b, c, r.llm.URL+"/v1/chat/completions", "", bodies, nil)
	// Warm-up: connections, actors' code paths.
	wave(b, c, r.url+"/v1/chat/completions", "", bodies[:50], nil)
	// One chat at a time: the path's own latency, without queueing.
	var serial []time.Duration
	for i := range 50 {
		serial = append(serial, wave(b, c, r.url+"/v1/chat/completions", "", bodies[i:i+1], nil)...)
	}

	before := heap()
	var all []time.Duration
	var elapsed time.Duration
	turns := 0
	var idleHeap uint64
	b.ResetTimer()
	for range b.N {
		sessions := make([]string, benchChats)
		t0 := time.Now()
		first := wave(b, c, r.url+"/v1/chat/completions", "", bodies, sessions)
		second := wave(b, c, r.url+"/v1/chat/completions", "", bodies, sessions)
		elapsed += time.Since(t0)
		turns += 2 * benchChats
		all = append(append(all, first...), second...)
		b.StopTimer()
		idleHeap = heap()
		b.StartTimer()
	}
	b.StopTimer()
	c.CloseIdleConnections()
	n := float64(b.N * benchChats)
	perSession := float64(idleHeap-min(before, idleHeap)) / n
	b.ReportMetric(float64(turns)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(float64(pct(all, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(pct(all, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(pct(base, 0.50))/1e6, "model-p50-ms")
	b.ReportMetric(float64(pct(base, 0.99))/1e6, "model-p99-ms")
	b.ReportMetric(float64(pct(all, 0.99)-pct(base, 0.99))/1e6, "p99-overhead-ms")
	b.ReportMetric(perSession/1024, "KiB/idle-session")
	b.ReportMetric(float64(pct(serial, 0.50))/1e6, "one-chat-p50-ms")
	b.ReportMetric(float64(pct(serial, 0.99))/1e6, "one-chat-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkServerAlone isolates the API server: its Inbox answers each
// message itself after the model's 50 ms (typing, then the reply, through
// Send as the gateway delivers them), with no router, actors or store. The
// p99 over 50 ms is what the HTTP front door adds at 1,000 chats at once.
//
//	go test -run '^$' -bench ServerAlone -benchtime 3x ./adapters/gateway/apiserver/
func BenchmarkServerAlone(b *testing.B) {
	api, err := apiserver.New(apiserver.Options{Host: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	inbox := func(_ context.Context, in schema.Inbound) error {
		sid := in.SessionID
		if sid == "" {
			sid = "s-" + in.Chat
		}
		out := schema.Outbound{Platform: in.Platform, Chat: in.Chat, InReplyTo: in.MessageID, SessionID: sid}
		go func() {
			typing := out
			typing.Kind = "typing"
			_, _ = api.Send(ctx, typing)
			time.Sleep(modelDelay)
			reply := out
			reply.Kind, reply.Text = "reply", "ok"
			_, _ = api.Send(ctx, reply)
		}()
		return nil
	}
	go func() { defer close(done); _ = api.Run(ctx, inbox) }()
	<-api.Listening()
	defer func() { cancel(); <-done }()
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: 2 * benchChats, MaxIdleConnsPerHost: 2 * benchChats}}
	defer c.CloseIdleConnections()
	bodies := make([][]byte, benchChats)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"model":"hermes-agent","messages":[{"role":"user","content":"chat %d"}]}`, i)
	}
	url := "http://" + api.Addr() + "/v1/chat/completions"
	wave(b, c, url, "", bodies[:100], nil)
	var all []time.Duration
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		all = append(all, wave(b, c, url, "", bodies, nil)...)
		elapsed += time.Since(t0)
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(float64(pct(all, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(pct(all, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(pct(all, 0.99)-modelDelay)/1e6, "p99-overhead-ms")
	b.ReportMetric(0, "ns/op")
}
