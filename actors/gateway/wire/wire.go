// Package wire is the contract of the gateway's messages on the bus, which
// the router and the platform adapters both speak: the topics that carry
// schema.Inbound and schema.Outbound, how a message is encoded (JSON, the
// correlation id that ends up in the events it causes in its metadata),
// and the Transport the router runs on. The transports themselves (an
// in-process GoChannel, NATS JetStream) are in adapters/bus.
package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
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

// Transport is a publisher and a subscriber on one transport, and the
// logger watermill reports through: what the router runs on. adapters/bus
// opens them (its Bus embeds one).
type Transport struct {
	Publisher  message.Publisher
	Subscriber message.Subscriber
	Logger     watermill.LoggerAdapter
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
