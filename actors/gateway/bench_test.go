package gateway_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// BenchmarkGatewayOverhead is what the gateway adds to a message: from the
// platform's inbound message to the reply handed to the platform's Send —
// bus, router, chat actor, its events (chat opened, session bound, message
// received, reply requested: each appended durably), the turn, the outbox,
// the bus again — beside the same turn run directly with
// session.Manager.Run in the same run, one after the other, on the same
// store and instant scripted model. new-chat gives each message a chat and
// a session of its own (direct: session.Create, then Run); same-chat sends
// every message to one chat (direct: one session), so histories grow alike.
//
// Metrics, in µs: p50/p99 of the gateway path end to end and of the direct
// turn; overhead-p50/p99, the gateway's own part of each message (the end
// to end time less the turn inside it, timed around the router's RunTurn
// call), which the machine's noise on the turn does not blur; and the
// ratio of the p50s. HERMES_BENCH_DIR=/dev/shm keeps the store off the
// disk.
func BenchmarkGatewayOverhead(b *testing.B) {
	for _, mode := range []string{"new-chat", "same-chat"} {
		b.Run("gochannel/"+mode, func(b *testing.B) { benchOverhead(b, "", mode) })
		b.Run("nats/"+mode, func(b *testing.B) {
			srv := bustest.StartNATS(b)
			benchOverhead(b, srv.URL, mode)
		})
	}
}

func benchOverhead(b *testing.B, busURL, mode string) {
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	// HERMES_BENCH_DIR puts the store elsewhere (/dev/shm: without the
	// disk's fsyncs, what is left is the gateway's own cost).
	dir := ""
	if d := os.Getenv("HERMES_BENCH_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "hermes-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	timed := &timedSessions{}
	rig := gatewaytest.Start(b, gatewaytest.Options{Dir: dir, BusURL: busURL, LLM: llm, Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}},
		WrapSessions: func(s gateway.Sessions) gateway.Sessions { timed.Sessions = s; return timed }})
	replies := make(chan schema.Outbound, 64)
	chat := gatewaytest.NewChat("bench")
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies <- o
		}
	}
	rig.Serve(chat, rig.OpenBus())
	ctx := context.Background()
	newSession := func() string {
		id := uuid.NewString()
		if err := session.Create(ctx, rig.Store, id, session.Start{Source: "bench", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			b.Fatal(err)
		}
		return id
	}
	direct := newSession()
	// viaGateway returns the time from the inbound message to the reply
	// handed to Send, and the part of it spent in the turn.
	viaGateway := func(i int) (time.Duration, time.Duration) {
		in := gatewaytest.DM("u", fmt.Sprint(i), "ping")
		if mode == "new-chat" {
			in = gatewaytest.DM(fmt.Sprint("u", i), "1", "ping")
		}
		t0 := time.Now()
		chat.Post(b, in)
		select {
		case r := <-replies:
			if r.Text != "pong" {
				b.Fatalf("reply %+v", r)
			}
		case <-time.After(20 * time.Second):
			b.Fatal("no reply in 20s")
		}
		return time.Since(t0), timed.last()
	}
	directly := func() time.Duration {
		t0 := time.Now()
		id := direct
		if mode == "new-chat" {
			id = newSession()
		}
		if res := rig.Sessions.Run(ctx, id, "ping", nil); res.Err != nil || res.Answer != "pong" {
			b.Fatalf("%+v", res)
		}
		return time.Since(t0)
	}
	// Warm up both paths (connections, actors, SQLite pages).
	for i := range 20 {
		viaGateway(-1 - i)
		directly()
	}
	var gw, dr, over []time.Duration
	i := 0
	for b.Loop() {
		total, turn := viaGateway(i)
		gw, over = append(gw, total), append(over, total-turn)
		dr = append(dr, directly())
		i++
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(percentile(gw, 50)), "gw-p50-µs")
	b.ReportMetric(us(percentile(gw, 99)), "gw-p99-µs")
	b.ReportMetric(us(percentile(dr, 50)), "direct-p50-µs")
	b.ReportMetric(us(percentile(dr, 99)), "direct-p99-µs")
	b.ReportMetric(us(percentile(over, 50)), "overhead-p50-µs")
	b.ReportMetric(us(percentile(over, 99)), "overhead-p99-µs")
	b.ReportMetric(float64(percentile(gw, 50))/float64(percentile(dr, 50)), "ratio-p50")
	b.ReportMetric(float64(len(gw))/b.Elapsed().Seconds(), "gw+direct-msgs/s")
	b.ReportMetric(0, "ns/op")
}

// timedSessions times the router's turns (one at a time here).
type timedSessions struct {
	gateway.Sessions
	mu   sync.Mutex
	turn time.Duration
}

func (s *timedSessions) RunTurn(ctx context.Context, id string, t *session.Turn) session.TurnResult {
	t0 := time.Now()
	res := s.Sessions.RunTurn(ctx, id, t)
	d := time.Since(t0)
	s.mu.Lock()
	s.turn = d
	s.mu.Unlock()
	return res
}

func (s *timedSessions) last() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}
