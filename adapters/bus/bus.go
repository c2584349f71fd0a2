// Package bus wires the watermill pub/sub that carries the gateway's
// messages between platform adapters and the router: an in-process bus by
// default (gochannel), NATS JetStream when adapters and agents run in
// separate processes. The topics and the messages' encoding (JSON, the
// correlation id in their metadata) are actors/gateway/wire's.
package bus

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
)

// Bus is a publisher and a subscriber on one transport: the router's
// wire.Transport, with what opening it adds.
type Bus struct {
	wire.Transport
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
// bus, nats://host:port (or tls://host:port) for NATS JetStream.
func Open(url string, log zerolog.Logger) (*Bus, error) { return OpenWith(url, nil, log) }

// OpenWith is Open with the TLS configuration of a NATS connection (nil:
// plain nats://, or tls:// against the system's roots). User and password
// or a token go in the URL (nats://user:pass@host:4222).
func OpenWith(url string, tc *tls.Config, log zerolog.Logger) (*Bus, error) {
	wlog := Logger(log)
	switch {
	case url == "" || url == "gochannel":
		// Not persistent: the router and the adapters subscribe before
		// anything is published, and what must survive a crash is in the
		// event store, not on the bus. Publish waits for the subscriber's
		// ack, so a chat's messages cannot overtake each other, and a
		// publisher learns that its message was handled (an adapter, that
		// its inbound message is recorded) and must not publish from
		// inside a handler of the same chain; the router publishes from a
		// queue of its own. The name is watermill's GoChannel, which it
		// was until GoChannel's shared lock let one slow platform stop the
		// others (see inProcess).
		ip := newInProcess(wlog)
		return &Bus{Transport: wire.Transport{Publisher: ip, Subscriber: ip, Logger: wlog}, Kind: "gochannel", close: ip.Close}, nil
	case IsNATS(url):
		return openNATS(url, 0, tc, log)
	}
	return nil, fmt.Errorf("gateway.bus %q: use gochannel (default), nats://host:port or tls://host:port", url)
}

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

// IsNATS tells whether url names a NATS server (nats:// or tls://).
func IsNATS(url string) bool {
	return strings.HasPrefix(url, "nats://") || strings.HasPrefix(url, "tls://")
}
