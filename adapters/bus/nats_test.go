package bus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
)

func openBus(t *testing.T, url string) *bus.Bus {
	t.Helper()
	b, err := bus.Open(url, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

type note struct{ N int }

func publish(t *testing.T, b *bus.Bus, topic string, n int) {
	t.Helper()
	if err := wire.Publish(b.Publisher, topic, note{n}, ""); err != nil {
		t.Fatal(err)
	}
}

// next receives one message and decodes it (without acknowledging it).
func next(t *testing.T, ch <-chan *message.Message, within time.Duration) (*message.Message, int) {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		var v note
		if err := wire.Decode(m, &v); err != nil {
			t.Fatal(err)
		}
		return m, v.N
	case <-time.After(within):
		return nil, 0
	}
}

// A subscriber that goes away and comes back (a restarted gateway) gets
// what was published meanwhile, and nothing it had already acknowledged.
func TestNATSDurableAcrossRestarts(t *testing.T) {
	srv := bustest.StartNATS(t)
	pub := openBus(t, srv.URL)
	const topic = "gateway_test_durable"

	first := openBus(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := first.Subscriber.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, pub, topic, 1)
	m, n := next(t, ch, 5*time.Second)
	if n != 1 {
		t.Fatalf("got %d", n)
	}
	m.Ack()
	time.Sleep(100 * time.Millisecond) // the ack reaches the server
	cancel()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	publish(t, pub, topic, 2) // while nobody subscribes

	second := openBus(t, srv.URL)
	ch, err = second.Subscriber.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	m, n = next(t, ch, 5*time.Second)
	if m == nil || n != 2 {
		nc, _ := nats.Connect(srv.URL)
		js, _ := nc.JetStream()
		ci, err := js.ConsumerInfo(topic, bus.Durable(topic))
		si, _ := js.StreamInfo(topic)
		t.Logf("consumer %+v %v\nstream %+v", ci, err, si.State)
		t.Fatalf("after the restart got %d, want 2 (1 was acknowledged before)", n)
	}
	m.Ack()
	if m, n := next(t, ch, 500*time.Millisecond); m != nil {
		t.Fatalf("unexpected message %d", n)
	}
	// The broker restarting loses nothing either (file storage).
	publish(t, pub, topic, 3)
	srv.Stop()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	m, n = next(t, ch, 15*time.Second)
	if m == nil || n != 3 {
		t.Fatalf("after the broker's restart got %d, want 3", n)
	}
	m.Ack()
}

// One message of a topic is handled at a time, in order, and a message
// handed back (nacked) is handled again before the ones after it: a chat's
// messages never overtake each other.
func TestNATSOrderKeptAcrossNacks(t *testing.T) {
	srv := bustest.StartNATS(t)
	pub := openBus(t, srv.URL)
	sub := openBus(t, srv.URL)
	const topic = "gateway_test_order"
	for i := 1; i <= 20; i++ {
		publish(t, pub, topic, i)
	}
	ch, err := sub.Subscriber.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	nacked := false
	for len(got) < 20 {
		m, n := next(t, ch, 5*time.Second)
		if m == nil {
			t.Fatalf("stalled after %v", got)
		}
		if n == 5 && !nacked {
			nacked = true
			m.Nack()
			continue
		}
		got = append(got, n)
		m.Ack()
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("order %v", got)
		}
	}
}

// Two gateway processes on one topic share its messages: each is handled
// once.
func TestNATSQueueGroupSharesMessages(t *testing.T) {
	srv := bustest.StartNATS(t)
	pub := openBus(t, srv.URL)
	const topic = "gateway_test_shared"
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		b := openBus(t, srv.URL)
		ch, err := b.Subscriber.Subscribe(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ch {
				var v note
				_ = wire.Decode(m, &v)
				mu.Lock()
				seen[v.N]++
				mu.Unlock()
				m.Ack()
			}
		}()
	}
	for i := range 30 {
		publish(t, pub, topic, i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 30 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for i := range 30 {
		if seen[i] != 1 {
			t.Fatalf("message %d handled %d times (%v)", i, seen[i], seen)
		}
	}
}

// A handler still at work past the ack wait (a delivery being retried)
// keeps its message: it is not handed to another process meanwhile.
func TestNATSSlowHandlerKeepsItsMessage(t *testing.T) {
	srv := bustest.StartNATS(t)
	pub := openBus(t, srv.URL)
	const topic = "gateway_test_slow"
	deliveries := make(chan int, 10)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		b, err := bus.OpenNATS(srv.URL, time.Second, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		ch, err := b.Subscriber.Subscribe(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ch {
				var v note
				_ = wire.Decode(m, &v)
				deliveries <- v.N
				if v.N == 1 {
					time.Sleep(2500 * time.Millisecond) // 2.5× the ack wait
				}
				m.Ack()
			}
		}()
	}
	publish(t, pub, topic, 1)
	publish(t, pub, topic, 2)
	var got []int
	for len(got) < 2 {
		select {
		case n := <-deliveries:
			got = append(got, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("deliveries %v", got)
		}
	}
	select {
	case n := <-deliveries:
		got = append(got, n)
	case <-time.After(2 * time.Second):
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("deliveries %v, want [1 2]: a message was delivered again while its handler was at work", got)
	}
}
