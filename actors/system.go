package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// NewSystem returns an actor system whose own logging goes to log.
func NewSystem(log zerolog.Logger) *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slogToZerolog{log: log.With().Str("component", "protoactor").Logger()})
	}))
}

// slogToZerolog is a slog.Handler writing into zerolog, so that the actor
// system's diagnostics are structured like ours and go where ours go.
type slogToZerolog struct {
	log   zerolog.Logger
	attrs []slog.Attr
}

func (h slogToZerolog) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= level(l)
}

func level(l slog.Level) zerolog.Level {
	switch {
	case l >= slog.LevelError:
		return zerolog.ErrorLevel
	case l >= slog.LevelWarn:
		return zerolog.WarnLevel
	case l >= slog.LevelInfo:
		return zerolog.InfoLevel
	}
	return zerolog.DebugLevel
}

func (h slogToZerolog) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.WithLevel(level(r.Level))
	for _, a := range h.attrs {
		ev = ev.Interface(a.Key, a.Value.Any())
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = ev.Interface(a.Key, a.Value.Any())
		return true
	})
	ev.Msg(r.Message)
	return nil
}

func (h slogToZerolog) WithAttrs(as []slog.Attr) slog.Handler {
	return slogToZerolog{log: h.log, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h slogToZerolog) WithGroup(string) slog.Handler { return h }
