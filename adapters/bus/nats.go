package bus

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/nats-io/nats.go"
)

// openNATS connects to NATS JetStream: each topic is a stream (created when
// missing), subscribers are durable queue groups, so a message published
// while its consumer is down waits for it, and two gateway processes on
// one topic share its messages instead of both handling each one.
func openNATS(url string, wlog watermill.LoggerAdapter) (*Bus, error) {
	opts := []nats.Option{nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond), nats.Timeout(5 * time.Second)}
	js := wnats.JetStreamConfig{
		AutoProvision: true,
		TrackMsgId:    true,
		DurablePrefix: "hermes",
		DurableCalculator: func(prefix, topic string) string {
			return prefix + "_" + topic
		},
	}
	pub, err := wnats.NewPublisher(wnats.PublisherConfig{URL: url, NatsOptions: opts, Marshaler: &wnats.NATSMarshaler{}, JetStream: js}, wlog)
	if err != nil {
		return nil, fmt.Errorf("gateway.bus %s: %w", url, err)
	}
	sub, err := wnats.NewSubscriber(wnats.SubscriberConfig{
		URL: url, NatsOptions: opts, Unmarshaler: &wnats.NATSMarshaler{},
		QueueGroupPrefix: "hermes", SubscribersCount: 1,
		AckWaitTimeout: 30 * time.Second, CloseTimeout: 5 * time.Second, SubscribeTimeout: 10 * time.Second,
		JetStream: js,
	}, wlog)
	if err != nil {
		pub.Close()
		return nil, fmt.Errorf("gateway.bus %s: %w", url, err)
	}
	return &Bus{Publisher: pub, Subscriber: sub, Logger: wlog, Kind: "nats",
		close: func() error { return errors.Join(sub.Close(), pub.Close()) }}, nil
}
