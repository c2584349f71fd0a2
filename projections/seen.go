package projections

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hermes-go/hermes/internal/sqlite"
)

// LogSeen is how far the projections of a home got in one log.
type LogSeen struct {
	Log      string
	Position uint64
}

// LogsSeen reads, without writing anything, the logs the SQLite
// projections database at path has checkpoints of, each with the highest
// position applied: a record of the event log kept apart from it, which
// the event store checks at open (a log the projections went further in
// than it now goes has lost events). A missing database has seen nothing.
func LogsSeen(ctx context.Context, path string) ([]LogSeen, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	db, err := sqlite.OpenReadOnly(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT log, max(position) FROM checkpoints WHERE log != '' GROUP BY log`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, fmt.Errorf("read the checkpoints in %s: %w", path, err)
	}
	defer rows.Close()
	var out []LogSeen
	for rows.Next() {
		var s LogSeen
		if err := rows.Scan(&s.Log, &s.Position); err != nil {
			return nil, fmt.Errorf("read the checkpoints in %s: %w", path, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
