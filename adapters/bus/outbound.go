package bus

import (
	"context"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/schema"
)

// OutboundPublisher publishes outbound messages on Bus, each on its
// platform's topic: the cron scheduler's Publisher (cron.Config.Bus),
// handed in by cmd/hermes.
type OutboundPublisher struct{ Bus *Bus }

// Publish implements cron.Publisher.
func (p OutboundPublisher) Publish(_ context.Context, out schema.Outbound) error {
	return wire.Publish(p.Bus.Publisher, wire.Out(out.Platform), out, "")
}
