package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
)

// JetStream layout. Every topic is a stream of the same name holding that
// one subject (topics have no dots), with one durable consumer that the
// gateway creates itself:
//
//   - Work-queue retention: a message is removed once acknowledged, and
//     one published while its consumer is down (or was never created)
//     waits for it — up to streamMaxAge.
//   - The consumer is durable, and is bound to rather than created by the
//     subscription: the NATS client deletes a consumer it created when the
//     subscription ends, and the next start, with a new consumer, would be
//     handed the whole stream again.
//   - It has a deliver group, so two gateway processes share a topic's
//     messages instead of both handling each; and at most one message
//     unacknowledged, so a topic's messages are handled one at a time, in
//     order, a redelivered one before those after it (a chat's messages
//     never overtake each other).
//   - Acknowledgements are explicit (not waited for: the next message
//     comes once the server has the ack); a handler still at work
//     (a delivery being retried for a minute) says so every ackWait/3, so
//     its message is not redelivered meanwhile, while the message of a
//     process that died is redelivered after the ack wait.
const (
	streamMaxAge = 7 * 24 * time.Hour
	// DefaultAckWait is how long an unacknowledged message waits before
	// it is delivered again.
	DefaultAckWait = 30 * time.Second
	queueGroup     = "hermes"
	durablePrefix  = "hermes_"
	deliverPrefix  = "hermes.deliver."
	closeTimeout   = 10 * time.Second
	jsAPITimeout   = 5 * time.Second
	publishRetries = 3
)

// OpenNATS connects to NATS JetStream at url (nats://host:port) with an
// ack wait of its own (0: DefaultAckWait). Each Bus is a connection of its
// own, as each gateway process has.
func OpenNATS(url string, ackWait time.Duration, log zerolog.Logger) (*Bus, error) {
	return openNATS(url, ackWait, nil, log)
}

func openNATS(url string, ackWait time.Duration, tc *tls.Config, log zerolog.Logger) (*Bus, error) {
	if ackWait <= 0 {
		ackWait = DefaultAckWait
	}
	wlog := Logger(log)
	opts := []nats.Option{nats.Name("hermes-gateway"), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond), nats.Timeout(5 * time.Second)}
	if tc != nil {
		opts = append(opts, nats.Secure(tc))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("gateway.bus %s: %w", url, err)
	}
	js, err := nc.JetStream(nats.MaxWait(jsAPITimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("gateway.bus %s: %w", url, err)
	}
	streams := &streams{js: js, ready: map[string]bool{}}
	// Streams are provisioned here (once per topic), not by the publisher
	// on every message, and with the settings above.
	pub, err := wnats.NewPublisherWithNatsConn(nc, wnats.PublisherPublishConfig{
		Marshaler: &wnats.NATSMarshaler{}, SubjectCalculator: wnats.DefaultSubjectCalculator,
		JetStream: wnats.JetStreamConfig{TrackMsgId: true, PublishOptions: []nats.PubOpt{nats.RetryAttempts(publishRetries)}},
	}, wlog)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("gateway.bus %s: %w", url, err)
	}
	sub := &jsSubscriber{js: js, streams: streams, log: wlog, ackWait: ackWait, closing: make(chan struct{})}
	return &Bus{Transport: wire.Transport{Publisher: &jsPublisher{pub: pub, streams: streams}, Subscriber: sub, Logger: wlog}, Kind: "nats",
		close: func() error {
			err := sub.Close()
			// The server has seen the unsubscriptions once a flush returns:
			// nothing more is delivered here, to be dropped and redelivered
			// only after the ack wait. Then what was published goes out and
			// the connection closes.
			if ferr := nc.FlushTimeout(jsAPITimeout); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
				err = errors.Join(err, ferr)
			}
			return errors.Join(err, nc.Drain())
		}}, nil
}

// streams creates each topic's stream once per connection.
type streams struct {
	js    nats.JetStreamContext
	mu    sync.Mutex
	ready map[string]bool
}

func (s *streams) ensure(topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready[topic] {
		return nil
	}
	_, err := s.js.StreamInfo(topic)
	if errors.Is(err, nats.ErrStreamNotFound) {
		_, err = s.js.AddStream(&nats.StreamConfig{Name: topic, Subjects: []string{topic}, Retention: nats.WorkQueuePolicy,
			Storage: nats.FileStorage, MaxAge: streamMaxAge, Duplicates: 2 * time.Minute})
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", topic, err)
	}
	s.ready[topic] = true
	return nil
}

// jsPublisher publishes through watermill's JetStream publisher (each
// message with its id, so a publish retried after a lost acknowledgement
// is stored once) after making sure the topic's stream exists.
type jsPublisher struct {
	pub     *wnats.Publisher
	streams *streams
}

func (p *jsPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.streams.ensure(topic); err != nil {
		return err
	}
	return p.pub.Publish(topic, msgs...)
}

// Close is done by the Bus, which owns the connection.
func (p *jsPublisher) Close() error { return nil }

// jsSubscriber consumes a topic's durable consumer (see the layout above).
type jsSubscriber struct {
	js      nats.JetStreamContext
	streams *streams
	log     watermill.LoggerAdapter
	ackWait time.Duration

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// Durable is the name of the consumer of topic.
func Durable(topic string) string { return durablePrefix + topic }

func (s *jsSubscriber) ensureConsumer(topic string) error {
	want := nats.ConsumerConfig{Durable: Durable(topic), DeliverSubject: deliverPrefix + topic, DeliverGroup: queueGroup,
		DeliverPolicy: nats.DeliverAllPolicy, AckPolicy: nats.AckExplicitPolicy, AckWait: s.ackWait, MaxAckPending: 1,
		MaxDeliver: -1, FilterSubject: topic, ReplayPolicy: nats.ReplayInstantPolicy}
	info, err := s.js.ConsumerInfo(topic, want.Durable)
	switch {
	case errors.Is(err, nats.ErrConsumerNotFound):
		_, err = s.js.AddConsumer(topic, &want)
	case err == nil && (info.Config.AckWait != want.AckWait || info.Config.MaxAckPending != want.MaxAckPending ||
		info.Config.DeliverGroup != want.DeliverGroup || info.Config.DeliverSubject != want.DeliverSubject):
		_, err = s.js.UpdateConsumer(topic, &want)
		if err != nil {
			return fmt.Errorf("consumer %s of stream %s has other settings and cannot be updated (%w): remove it (nats consumer rm %s %s) and start again",
				want.Durable, topic, err, topic, want.Durable)
		}
	}
	if err != nil {
		return fmt.Errorf("consumer %s of stream %s: %w", want.Durable, topic, err)
	}
	return nil
}

// Subscribe consumes topic until ctx ends or the subscriber closes.
func (s *jsSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("subscriber closed")
	}
	s.wg.Add(1)
	s.mu.Unlock()
	if err := s.streams.ensure(topic); err != nil {
		s.wg.Done()
		return nil, err
	}
	if err := s.ensureConsumer(topic); err != nil {
		s.wg.Done()
		return nil, err
	}
	out := make(chan *message.Message)
	var inflight sync.WaitGroup
	var stopMu sync.Mutex
	stopped := false
	handler := func(m *nats.Msg) {
		stopMu.Lock()
		if stopped {
			stopMu.Unlock()
			_ = m.Nak() // to whoever consumes next, now rather than after the ack wait
			return
		}
		inflight.Add(1)
		stopMu.Unlock()
		defer inflight.Done()
		s.handle(ctx, topic, m, out)
	}
	sub, err := s.js.QueueSubscribe(topic, queueGroup, handler, nats.Bind(topic, Durable(topic)), nats.ManualAck())
	if err != nil {
		s.wg.Done()
		return nil, fmt.Errorf("subscribe to %s: %w", topic, err)
	}
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
		case <-s.closing:
		}
		stopMu.Lock()
		stopped = true
		stopMu.Unlock()
		// The consumer stays on the server (it was bound, not created).
		if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			s.log.Error("unsubscribe", err, watermill.LogFields{"topic": topic})
		}
		inflight.Wait()
		close(out)
	}()
	return out, nil
}

// handle hands one message to the consumer of out and waits for its ack.
func (s *jsSubscriber) handle(ctx context.Context, topic string, m *nats.Msg, out chan<- *message.Message) {
	fields := watermill.LogFields{"topic": topic}
	msg, err := (&wnats.NATSMarshaler{}).Unmarshal(m)
	if err != nil {
		// It will never decode: drop it rather than block the topic.
		s.log.Error("dropping a message that does not decode", err, fields)
		_ = m.Term()
		return
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg.SetContext(mctx)
	select {
	case out <- msg:
	case <-ctx.Done():
		return
	case <-s.closing:
		return
	}
	progress := time.NewTicker(s.ackWait / 3)
	defer progress.Stop()
	var giveUp <-chan time.Time
	stopping := ctx.Done()
	closing := s.closing
	for {
		select {
		case <-msg.Acked():
			// Not AckSync: with one message unacknowledged at a time the
			// server hands out the next only once it has this ack, and an
			// ack lost on the way is a redelivery after the ack wait
			// either way; waiting for the server's reply only cost a
			// message and a round trip per delivery.
			if err := m.Ack(); err != nil {
				s.log.Error("acknowledge", err, fields)
			}
			return
		case <-msg.Nacked():
			if err := m.Nak(); err != nil {
				s.log.Error("hand back", err, fields)
			}
			return
		case <-progress.C:
			_ = m.InProgress()
		case <-stopping:
			// Shutting down: the handler may still finish in a moment.
			stopping, closing, giveUp = nil, nil, time.After(closeTimeout)
			cancel()
		case <-closing:
			stopping, closing, giveUp = nil, nil, time.After(closeTimeout)
			cancel()
		case <-giveUp:
			return // redelivered after the ack wait
		}
	}
}

// Close stops every subscription, waiting for the messages in hand.
func (s *jsSubscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(closeTimeout + time.Second):
		return errors.New("bus subscriber: messages still in hand after the close timeout")
	}
}
