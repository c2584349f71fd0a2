package app

import (
	"context"
	"path/filepath"

	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
)

// WitnessFile is where the embedded store of a home keeps its witness:
// the log's identity and how far it went (see events/embedded/guard.go).
// Its name does not start with events.db, so that deleting events.db*
// leaves it to tell.
const WitnessFile = "store-witness.json"

// EmbeddedOptions are the options of the home's embedded store: its
// witness, and the projections' checkpoints, which remember the log too
// (a log deleted together with its witness is still noticed).
func (g *Factory) EmbeddedOptions(home string) []embedded.Option {
	opts := []embedded.Option{
		embedded.WithLogger(g.Log),
		embedded.WithWitness(filepath.Join(home, WitnessFile)),
		embedded.WithRemembered(func(ctx context.Context) ([]embedded.Remembered, error) {
			path := filepath.Join(home, "projections.db")
			seen, err := projections.LogsSeen(ctx, path)
			if err != nil {
				// A damaged projections.db is rebuilt; it must not keep
				// the log from opening.
				g.Log.Warn().Err(err).Str("file", path).Msg("the projections' checkpoints cannot be read to check the event log against")
				return nil, nil
			}
			out := make([]embedded.Remembered, 0, len(seen))
			for _, s := range seen {
				out = append(out, embedded.Remembered{Source: path, Log: s.Log, Position: s.Position})
			}
			return out, nil
		}),
	}
	if g.AcceptLog {
		opts = append(opts, embedded.AcceptLog())
	}
	return opts
}
