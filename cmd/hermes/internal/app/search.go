package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/search"
)

// searchWait bounds how long a search waits for another process to let
// go of the index (a long catch-up or rebuild there).
const searchWait = 2 * time.Minute

// SearchIndex opens the search index, brings it up to date, and runs fn.
// The index's file lock admits one process at a time and each holds it
// only for one search, so a busy index is waited for (up to searchWait or
// the end of ctx); waiting, if given, is told once that we wait.
func (a *App) SearchIndex(ctx context.Context, rebuild bool, waiting func(), fn func(*search.Index) error) error {
	path := filepath.Join(a.Home, "search.bleve")
	deadline := time.Now().Add(searchWait)
	var idx *search.Index
	var err error
	for {
		if idx, err = search.Open(path); !errors.Is(err, search.ErrBusy) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (waited %s)", err, searchWait)
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	defer idx.Close()
	if idx.Replaced != nil {
		a.Log.Warn().Err(idx.Replaced).Str("path", path).Msg("search index replaced; rebuilding it from the events")
	}
	run := projections.NewRunner(a.Store, a.Log, idx)
	if rebuild {
		if err := run.Rebuild(ctx, ""); err != nil {
			return err
		}
	} else if _, err := run.CatchUp(ctx); err != nil {
		return err
	}
	return fn(idx)
}
