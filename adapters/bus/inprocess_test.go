package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/bus"
)

// within fails the run when f has not returned after d: a hung bus is a
// failure, not a test that never ends.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		// A stuck bus cannot be stopped either, so the test's cleanup
		// would wait for ever: end the run here, with every goroutine's
		// stack, instead of at go test's timeout.
		panic(fmt.Sprintf("%s: %s: still waiting after %s (the bus is stuck)", t.Name(), what, d))
	}
}

// consume acknowledges what arrives on topic, handing each message's
// payload to got, until ctx ends.
func consume(t *testing.T, ctx context.Context, sub message.Subscriber, topic string, handle func(*message.Message)) {
	t.Helper()
	ch, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range ch {
			handle(m)
			m.Ack()
		}
	}()
}

// TestInProcessLateSubscriberAndSlowDelivery is the gateway's restart as
// the in-process bus saw it: the router publishes a reply to one platform
// (webhook) whose delivery is slow (its callback unreachable); another
// platform (XMPP) subscribes meanwhile; the slow delivery ends by
// publishing its outcome back to the router. With watermill's GoChannel the
// publish waiting for the slow platform held a shared lock, the late
// subscriber waited for it exclusively, and the outcome's publish queued
// behind that wait: nothing moved again, and the late platform never
// started. Here every step finishes.
func TestInProcessLateSubscriberAndSlowDelivery(t *testing.T) {
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	outcomes := make(chan string, 10)
	consume(t, ctx, b.Subscriber, "gateway_in_0", func(m *message.Message) { outcomes <- string(m.Payload) })
	release := make(chan struct{})
	consume(t, ctx, b.Subscriber, wire.Out("webhook"), func(m *message.Message) {
		<-release // the callback does not answer
		if err := wire.Publish(b.Publisher, "gateway_in_0", "delivered "+string(m.Payload), ""); err != nil {
			t.Error(err)
		}
	})
	published := make(chan error, 1)
	go func() { published <- wire.Publish(b.Publisher, wire.Out("webhook"), "reply 1", "") }()
	time.Sleep(100 * time.Millisecond) // the reply is in the slow delivery

	late := make(chan struct{})
	go func() {
		defer close(late)
		consume(t, ctx, b.Subscriber, wire.Out("xmpp"), func(*message.Message) {})
	}()
	within(t, 5*time.Second, "the late platform's subscription", func() { <-late })
	time.Sleep(50 * time.Millisecond)
	close(release)
	within(t, 5*time.Second, "the slow delivery's outcome", func() {
		if got := <-outcomes; got != `"delivered \"reply 1\""` {
			t.Errorf("outcome %s", got)
		}
	})
	within(t, 5*time.Second, "the router's publish of the reply", func() {
		if err := <-published; err != nil {
			t.Error(err)
		}
	})
}

// TestInProcessSlowSubscriberBlocksNoOtherTopic: while one platform's
// delivery hangs, other platforms subscribe, publish and deliver freely.
func TestInProcessSlowSubscriberBlocksNoOtherTopic(t *testing.T) {
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hang := make(chan struct{})
	defer close(hang)
	consume(t, ctx, b.Subscriber, wire.Out("stuck"), func(*message.Message) { <-hang })
	go func() { _ = wire.Publish(b.Publisher, wire.Out("stuck"), "never delivered", "") }()
	time.Sleep(50 * time.Millisecond)

	var mu sync.Mutex
	got := map[string]int{}
	within(t, 10*time.Second, "20 platforms subscribing and delivering beside the stuck one", func() {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				topic := wire.Out(fmt.Sprint("p", i))
				consume(t, ctx, b.Subscriber, topic, func(*message.Message) { mu.Lock(); got[topic]++; mu.Unlock() })
				for range 10 {
					if err := wire.Publish(b.Publisher, topic, "hi", ""); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	})
	mu.Lock()
	defer mu.Unlock()
	for topic, n := range got {
		if n != 10 {
			t.Errorf("%s: %d delivered, want 10", topic, n)
		}
	}
	if len(got) != 20 {
		t.Errorf("%d platforms delivered, want 20", len(got))
	}
}

// Messages published before anyone subscribes wait for the first
// subscriber (the replies a restarted router sends again before the
// platforms subscribe), one at a time, in order, and a message handed back
// (nacked) is handled again before the ones after it.
func TestInProcessOrderKeptAcrossNacks(t *testing.T) {
	b := openBus(t, "")
	const topic = "gateway_test_order"
	within(t, 5*time.Second, "publishing with nobody subscribed", func() {
		for i := 1; i <= 20; i++ {
			publish(t, b, topic, i)
		}
	})
	ch, err := b.Subscriber.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 21; i <= 25; i++ {
			if err := wire.Publish(b.Publisher, topic, note{i}, ""); err != nil {
				t.Error(err)
			}
		}
	}()
	var got []int
	nacked := false
	for len(got) < 25 {
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

// Publish returns once every subscriber of the topic acknowledged the
// message, and not before; Close releases a publish still waiting, and
// the bus refuses work after it.
func TestInProcessPublishWaitsForEverySubscriber(t *testing.T) {
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	const topic = "gateway_test_fanout"
	var chans []<-chan *message.Message
	for range 2 {
		ch, err := b.Subscriber.Subscribe(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	done := make(chan error, 1)
	go func() { done <- wire.Publish(b.Publisher, topic, note{1}, "") }()
	m1, n1 := next(t, chans[0], 5*time.Second)
	m2, n2 := next(t, chans[1], 5*time.Second)
	if m1 == nil || m2 == nil || n1 != 1 || n2 != 1 {
		t.Fatalf("fan-out: %d %d", n1, n2)
	}
	m1.Ack()
	select {
	case <-done:
		t.Fatal("Publish returned before every subscriber acknowledged")
	case <-time.After(100 * time.Millisecond):
	}
	m2.Ack()
	within(t, 5*time.Second, "the publish after both acks", func() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	go func() { done <- wire.Publish(b.Publisher, topic, note{2}, "") }()
	if m, _ := next(t, chans[0], 5*time.Second); m == nil {
		t.Fatal("second message not delivered")
	}
	within(t, 5*time.Second, "Close with a publish waiting", func() { _ = b.Close() })
	within(t, 5*time.Second, "the publish Close released", func() { <-done })
	for _, ch := range chans {
		within(t, 5*time.Second, "the subscription's end", func() {
			for range ch {
			}
		})
	}
	if err := wire.Publish(b.Publisher, topic, note{3}, ""); err == nil {
		t.Error("Publish after Close succeeded")
	}
	if _, err := b.Subscriber.Subscribe(context.Background(), topic); err == nil {
		t.Error("Subscribe after Close succeeded")
	}
}

// A subscription whose context ends is closed and gets nothing more; the
// topic's next publish does not wait for it.
func TestInProcessUnsubscribe(t *testing.T) {
	b := openBus(t, "")
	const topic = "gateway_test_unsub"
	ctx, cancel := context.WithCancel(context.Background())
	gone, err := b.Subscriber.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stays, err := b.Subscriber.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	within(t, 5*time.Second, "the ended subscription to close", func() {
		for range gone {
		}
	})
	go func() {
		if err := wire.Publish(b.Publisher, topic, note{7}, ""); err != nil {
			t.Error(err)
		}
	}()
	m, n := next(t, stays, 5*time.Second)
	if m == nil || n != 7 {
		t.Fatalf("got %d", n)
	}
	m.Ack()
}
