package bus_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
)

// BenchmarkBusHop is one message across the bus: Publish on one connection
// until a subscriber on another has it in hand (and acknowledges it). It is
// the floor under the gateway's overhead, which crosses the bus three times
// on a message's critical path (inbound, the typing indicator ahead of the
// reply, the reply). Metrics: p50/p99 in µs.
func BenchmarkBusHop(b *testing.B) {
	b.Run("gochannel", func(b *testing.B) { benchHop(b, "") })
	b.Run("nats", func(b *testing.B) { benchHop(b, bustest.StartNATS(b).URL) })
}

func benchHop(b *testing.B, url string) {
	pub, err := bus.Open(url, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	sub := pub
	if url != "" {
		if sub, err = bus.Open(url, zerolog.Nop()); err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const topic = "gateway_bench_hop"
	ch, err := sub.Subscriber.Subscribe(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		for m := range ch {
			got <- time.Now()
			m.Ack()
		}
	}()
	hop := func() time.Duration {
		t0 := time.Now()
		go func() {
			if err := wire.Publish(pub.Publisher, topic, note{1}, ""); err != nil {
				b.Error(err)
			}
		}()
		return (<-got).Sub(t0)
	}
	for range 50 {
		hop()
	}
	var ds []time.Duration
	for b.Loop() {
		ds = append(ds, hop())
	}
	slices.Sort(ds)
	us := func(p int) float64 {
		return float64(ds[min(len(ds)-1, len(ds)*p/100)]) / float64(time.Microsecond)
	}
	b.ReportMetric(us(50), "p50-µs")
	b.ReportMetric(us(90), "p90-µs")
	b.ReportMetric(us(95), "p95-µs")
	b.ReportMetric(us(99), "p99-µs")
	b.ReportMetric(0, "ns/op")
}
