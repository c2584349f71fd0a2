package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/eventstoredb"
	"github.com/hermes-go/hermes/events/postgres"
)

// StoreSpec says which store to use, and where the choice came from.
func (g *Factory) StoreSpec(home string) (config.StoreSpec, error) {
	return config.Store(g.StoreFlag, home)
}

// OpenSpec opens the store spec names (home's, for the embedded one).
func OpenSpec(ctx context.Context, s config.StoreSpec, home string, log zerolog.Logger) (events.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	log.Debug().Str("store", s.String()).Msg("opening the event store")
	switch s.Kind {
	case config.StorePostgres:
		return postgres.Open(ctx, s.DSN, postgres.WithLogger(log))
	case config.StoreESDB:
		return eventstoredb.Open(ctx, s.DSN, eventstoredb.WithLogger(log))
	}
	return embedded.Open(filepath.Join(home, "events.db"), embedded.WithLogger(log))
}

// EmbeddedOnly refuses a command that works on the embedded store alone.
func (g *Factory) EmbeddedOnly(home, what string) error {
	spec, err := g.StoreSpec(home)
	if err != nil {
		return err
	}
	if spec.Kind != config.StoreEmbedded {
		return fmt.Errorf("%s works on the embedded store only; the store is %s", what, spec)
	}
	return nil
}
