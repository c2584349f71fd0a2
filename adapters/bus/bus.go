// Package bus wires the watermill pub/sub that carries the gateway's
// messages between platform adapters and the router: an in-process
// GoChannel by default, NATS JetStream when adapters and agents run in
// separate processes. Messages are JSON; their metadata carries the
// correlation id that ends up in the events they cause.
package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/rs/zerolog"
)

// Topics of the gateway. Topic names avoid dots: over NATS JetStream a
// topic is also a stream name.
const (
	// inPrefix + shard carries schema.Inbound from adapters to the router.
	inPrefix = "gateway_in_"
	// outPrefix + platform carries schema.Outbound to one platform.
	outPrefix = "gateway_out_"
)

// Shards is the number of inbound topics. A topic's messages are handled
// one at a time, in order, each recorded durably before the next is taken;
// a chat's messages always go to the same shard (so they stay in order)
// and the router takes the shards side by side, so that the durable writes
// of different chats share fsyncs.
const Shards = 8

// In is the inbound topic of a chat of platform.
func In(platform, chat string) string {
	h := fnv.New32a()
	h.Write([]byte(platform))
	h.Write([]byte{0})
	h.Write([]byte(chat))
	return inPrefix + strconv.Itoa(int(h.Sum32()%Shards))
}

// InTopics are every inbound topic.
func InTopics() []string {
	out := make([]string, Shards)
	for i := range out {
		out[i] = inPrefix + strconv.Itoa(i)
	}
	return out
}

// Out is the topic of platform's outbound messages.
func Out(platform string) string { return outPrefix + platform }

// Bus is a publisher and a subscriber on one transport.
type Bus struct {
	Publisher  message.Publisher
	Subscriber message.Subscriber
	Logger     watermill.LoggerAdapter
	// Kind names the transport: gochannel or nats.
	Kind  string
	close func() error
}

// Close closes the transport.
func (b *Bus) Close() error {
	if b.close == nil {
		return nil
	}
	return b.close()
}

// Open returns the bus named by url: "" or "gochannel" for the in-process
// bus, nats://host:port for NATS JetStream.
func Open(url string, log zerolog.Logger) (*Bus, error) {
	wlog := Logger(log)
	switch {
	case url == "" || url == "gochannel":
		// Not persistent: the router and the adapters subscribe before
		// anything is published, and what must survive a crash is in the
		// event store, not on the bus. Publish waits for the subscriber's
		// ack: GoChannel otherwise hands each message to its own goroutine,
		// and a chat's messages would overtake each other. So a publisher
		// learns that its message was handled (an adapter, that its inbound
		// message is recorded) and must not publish from inside a handler
		// of the same chain; the router publishes from a queue of its own.
		gc := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024, BlockPublishUntilSubscriberAck: true}, wlog)
		return &Bus{Publisher: gc, Subscriber: gc, Logger: wlog, Kind: "gochannel", close: gc.Close}, nil
	case strings.HasPrefix(url, "nats://"):
		return OpenNATS(url, 0, log)
	}
	return nil, fmt.Errorf("gateway.bus %q: use gochannel (default) or nats://host:port", url)
}

// Publish sends v as JSON on topic. correlation, when set, travels in the
// message's metadata.
func Publish(pub message.Publisher, topic string, v any, correlation string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message for %s: %w", topic, err)
	}
	msg := message.NewMessage(watermill.NewUUID(), b)
	if correlation != "" {
		middleware.SetCorrelationID(correlation, msg)
	}
	if err := pub.Publish(topic, msg); err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return nil
}

// Decode reads a JSON message into v.
func Decode(msg *message.Message, v any) error {
	if err := json.Unmarshal(msg.Payload, v); err != nil {
		return fmt.Errorf("message %s: %w", msg.UUID, err)
	}
	return nil
}

// Correlation returns the correlation id of msg ("" when none).
func Correlation(msg *message.Message) string { return middleware.MessageCorrelationID(msg) }

// ContextWithMessage is the context a handler of msg should use.
func ContextWithMessage(msg *message.Message) context.Context { return msg.Context() }

// Logger adapts zerolog to watermill's logger.
func Logger(log zerolog.Logger) watermill.LoggerAdapter {
	return zlog{log.With().Str("component", "bus").Logger()}
}

type zlog struct{ l zerolog.Logger }

func (z zlog) fields(e *zerolog.Event, f watermill.LogFields) *zerolog.Event {
	for k, v := range f {
		e = e.Interface(k, v)
	}
	return e
}

func (z zlog) Error(msg string, err error, f watermill.LogFields) {
	z.fields(z.l.Error().Err(err), f).Msg(msg)
}
func (z zlog) Info(msg string, f watermill.LogFields)  { z.fields(z.l.Debug(), f).Msg(msg) }
func (z zlog) Debug(msg string, f watermill.LogFields) { z.fields(z.l.Debug(), f).Msg(msg) }
func (z zlog) Trace(msg string, f watermill.LogFields) { z.fields(z.l.Trace(), f).Msg(msg) }
func (z zlog) With(f watermill.LogFields) watermill.LoggerAdapter {
	c := z.l.With()
	for k, v := range f {
		c = c.Interface(k, v)
	}
	return zlog{c.Logger()}
}
