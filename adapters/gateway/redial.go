package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/schema"
	"github.com/rs/zerolog"
)

// Redial is the life of a platform's connection, for a Platform's Run:
// dial, serve until the connection drops, and dial again, waiting from
// first (doubling, at most max) between attempts until ctx ends. A dial
// error that is a *PermanentError (a refused password) ends it at once;
// so do three failed dials in a row, returning the error so that the
// gateway shows it (and calls Run again). note records each error for the
// platform's status; what names the connection in the error of a dropped
// one.
func Redial[C any](ctx context.Context, log zerolog.Logger, what string, first, max time.Duration,
	dial func(context.Context) (C, error), serve func(context.Context, C) error, note func(error)) error {
	wait := first
	fails := 0
	for ctx.Err() == nil {
		c, err := dial(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			note(err)
			var perm *PermanentError
			if errors.As(err, &perm) {
				return err
			}
			if fails++; fails >= 3 {
				return err
			}
			log.Warn().Err(err).Dur("retry_in", wait).Msg("connect failed")
			Sleep(ctx, wait)
			wait = min(wait*2, max)
			continue
		}
		fails, wait = 0, first
		err = serve(ctx, c)
		if ctx.Err() != nil {
			return nil
		}
		note(fmt.Errorf("%s connection lost: %w", what, err))
		log.Warn().Err(err).Dur("retry_in", wait).Msg("connection lost")
		Sleep(ctx, wait)
		wait = min(wait*2, max)
	}
	return nil
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Offer hands msg to in until it is taken (recorded) or ctx ends, waiting
// longer between attempts (to 10 s): for platforms that do not deliver a
// message twice.
func Offer(ctx context.Context, log zerolog.Logger, in Inbox, msg schema.Inbound) {
	wait := 250 * time.Millisecond
	for {
		err := in(ctx, msg)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn().Err(err).Dur("retry_in", wait).Msg("message not accepted yet")
		Sleep(ctx, wait)
		wait = min(wait*2, 10*time.Second)
	}
}
