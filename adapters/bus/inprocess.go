package bus

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// maxHeld bounds the messages a topic keeps while nobody subscribes to it
// (as many as the router queues for one platform); beyond it they are
// dropped, as every message of such a topic was before.
const maxHeld = 4096

// errClosed is what Publish and Subscribe return once the bus is closed.
var errClosed = errors.New("in-process bus closed")

// inProcess is the in-process bus (gateway.bus: gochannel). Like
// watermill's GoChannel with BlockPublishUntilSubscriberAck, it hands each
// message to every subscriber of its topic and Publish returns once all
// have acknowledged it (a nack sends it again), one message of a topic at
// a time, so a topic's messages are handled in order. Unlike GoChannel,
// no lock is shared between topics while a delivery waits: GoChannel's
// Publish holds a read lock on all subscriptions until its subscribers
// acknowledge, and Subscribe takes that lock exclusively, so a platform
// whose delivery is slow held up every platform starting after it — and,
// through the writer waiting, every publish after that, including the slow
// delivery's own outcome, which nothing then released (issue 25 item 8).
// Here a topic's lock orders only that topic's messages, and subscribing
// never waits for a delivery.
//
// Messages published to a topic nobody subscribes to yet are kept (up to
// maxHeld) and handed to its first subscriber: the replies a restarted
// router sends again go out before the platforms have subscribed.
type inProcess struct {
	log watermill.LoggerAdapter

	mu      sync.Mutex // guards topics, each topic's subs and held, closed
	topics  map[string]*topic
	closed  bool
	closing chan struct{}
	subs    sync.WaitGroup // subscriptions not yet ended
}

type topic struct {
	name string
	// send is held while one of the topic's messages is delivered: the
	// topic's messages go one at a time, in order.
	send sync.Mutex
	subs []*subscription
	held []*message.Message
}

type subscription struct {
	ctx  context.Context
	out  chan *message.Message
	done chan struct{} // closed when the subscription ends

	// sending is held while a message is handed to out, so that out is
	// closed only when nobody sends on it.
	sending sync.Mutex
	ended   bool
}

func newInProcess(log watermill.LoggerAdapter) *inProcess {
	return &inProcess{log: log, topics: map[string]*topic{}, closing: make(chan struct{})}
}

// topicLocked returns the topic named name; b.mu is held.
func (b *inProcess) topicLocked(name string) *topic {
	t, ok := b.topics[name]
	if !ok {
		t = &topic{name: name}
		b.topics[name] = t
	}
	return t
}

// Publish hands msgs, in order, to every subscriber of topicName and
// returns once each has acknowledged them (at once when nobody subscribes:
// they are kept for the first subscriber).
func (b *inProcess) Publish(topicName string, msgs ...*message.Message) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	t := b.topicLocked(topicName)
	b.mu.Unlock()
	t.send.Lock()
	defer t.send.Unlock()
	for _, m := range msgs {
		b.deliver(t, m.Copy())
	}
	return nil
}

// deliver hands m (nil: only what is held) to the topic's subscribers, after
// what the topic held; t.send is held.
func (b *inProcess) deliver(t *topic, m *message.Message) {
	b.mu.Lock()
	if len(t.subs) == 0 {
		if m != nil && !b.closed {
			if len(t.held) < maxHeld {
				t.held = append(t.held, m)
			} else {
				b.log.Error("No subscriber and too many messages kept: message dropped", nil, watermill.LogFields{"topic": t.name, "message_uuid": m.UUID})
			}
		}
		b.mu.Unlock()
		return
	}
	held := t.held
	t.held = nil
	subs := slices.Clone(t.subs)
	b.mu.Unlock()
	for _, h := range held {
		b.fanOut(subs, h)
	}
	if m != nil {
		b.fanOut(subs, m)
	}
}

// fanOut hands m to each of subs and waits until each acknowledged it or
// ended.
func (b *inProcess) fanOut(subs []*subscription, m *message.Message) {
	if len(subs) == 1 {
		subs[0].deliver(m, b.closing)
		return
	}
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.deliver(m, b.closing)
		}()
	}
	wg.Wait()
}

// deliver hands a copy of m to the subscriber until it is acknowledged,
// sending it again after a nack, unless the subscription or the bus ends.
func (s *subscription) deliver(m *message.Message, closing <-chan struct{}) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	for {
		c := m.Copy()
		c.SetContext(ctx)
		if !s.hand(c) {
			return
		}
		select {
		case <-c.Acked():
			return
		case <-c.Nacked():
		case <-s.done:
			return
		case <-closing:
			return
		}
	}
}

// hand puts m on the subscriber's channel; false when the subscription
// ended first.
func (s *subscription) hand(m *message.Message) bool {
	s.sending.Lock()
	defer s.sending.Unlock()
	if s.ended {
		return false
	}
	select {
	case s.out <- m:
		return true
	case <-s.done:
		return false
	}
}

// Subscribe returns the channel of topicName's messages until ctx ends or
// the bus closes; it never waits for a delivery in progress.
func (b *inProcess) Subscribe(ctx context.Context, topicName string) (<-chan *message.Message, error) {
	s := &subscription{ctx: ctx, out: make(chan *message.Message), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errClosed
	}
	t := b.topicLocked(topicName)
	t.subs = append(t.subs, s)
	held := len(t.held) > 0
	b.subs.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.subs.Done()
		select {
		case <-ctx.Done():
		case <-b.closing:
		}
		b.mu.Lock()
		t.subs = slices.DeleteFunc(t.subs, func(o *subscription) bool { return o == s })
		b.mu.Unlock()
		close(s.done)
		s.sending.Lock()
		s.ended = true
		close(s.out)
		s.sending.Unlock()
	}()
	if held {
		// What was published before anyone subscribed, in order, ahead of
		// what comes next.
		go func() {
			t.send.Lock()
			defer t.send.Unlock()
			b.deliver(t, nil)
		}()
	}
	return s.out, nil
}

// Close ends every subscription; publishes waiting for an acknowledgement
// return. Messages kept for topics nobody subscribed to are dropped.
func (b *inProcess) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.closing)
	b.topics = map[string]*topic{}
	b.mu.Unlock()
	b.subs.Wait()
	return nil
}
