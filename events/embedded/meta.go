package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The meta table holds what is true of the log as a whole:
//
//   - log_id, created_at: the log's identity, made when the file is created
//     (or, for a file older than identities, when a writer first opens it).
//     Read models record it with their checkpoints, so a replaced or
//     recreated events.db is noticed instead of read as the same log.
//   - format: 2 once every position not held by a row is recorded in the
//     erased table, every stream's last revision in the streams table, and
//     new rows carry whole-record checksums.
//   - legacy_head: the last position written before format 2; rows up to it
//     may still carry the payload-only checksum of format 1.
//   - upgraded_to: how far the one-time checksum upgrade of those rows got.
const metaDDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS erased (position INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS streams (stream TEXT PRIMARY KEY, last INTEGER NOT NULL, deleted INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quarantine (
	position INTEGER PRIMARY KEY,
	stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, record_crc,
	reason   TEXT    NOT NULL,
	moved_ns INTEGER NOT NULL
);
`

// The quarantine table has no column types on purpose: a damaged row is
// copied there exactly as it is, whatever its columns hold.

// Identity names one event log. Two files with the same identity hold the
// same log (one may be a copy of the other, further along).
type Identity struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// upgradeChunk is how many old rows one transaction of the checksum
// upgrade rewrites: other processes wait for the write lock at most that
// long.
const upgradeChunk = 4096

// initMeta gives a new or older database its identity and format 2. It runs
// once per file, under the write lock, in the writer's first transaction.
func (s *Store) initMeta(ctx context.Context) error {
	if _, err := s.wdb.ExecContext(ctx, metaDDL); err != nil {
		return err
	}
	// Most opens find everything in place: they read without taking the
	// write lock (the transaction below takes it at BEGIN).
	if meta, err := readMeta(ctx, s.wdb); err == nil && meta["log_id"] != "" && meta["format"] == "2" {
		return nil
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	meta, err := readMeta(ctx, tx)
	if err != nil {
		return err
	}
	var changes [][2]string
	if meta["log_id"] == "" {
		changes = append(changes, [2]string{"log_id", uuid.NewString()}, [2]string{"created_at", time.Now().UTC().Format(time.RFC3339Nano)})
	}
	if meta["format"] != "2" {
		if old, err := hasColumn(ctx, tx, "crc"); err != nil {
			return err
		} else if old {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE events RENAME COLUMN crc TO record_crc`); err != nil {
				return fmt.Errorf("rename the checksum column: %w", err)
			}
		}
		head, err := allocated(tx)
		if err != nil {
			return err
		}
		// Before format 2 erasures left no record: every hole below the
		// head is one. They are recorded now so that from here on a
		// position missing without a record is damage.
		if head > 0 {
			if err := recordHoles(ctx, tx, head); err != nil {
				return fmt.Errorf("record erased positions: %w", err)
			}
			if err := recordEnds(ctx, tx); err != nil {
				return fmt.Errorf("record stream ends: %w", err)
			}
			s.log.Info().Str("file", s.path).Int64("events_up_to", head).Msg("event store: upgrading to whole-record checksums")
		}
		changes = append(changes, [2]string{"format", "2"}, [2]string{"legacy_head", strconv.FormatInt(head, 10)}, [2]string{"upgraded_to", "0"})
	}
	for _, kv := range changes {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, kv[0], kv[1]); err != nil {
			return err
		}
	}
	if len(changes) > 0 {
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// recordHoles inserts into erased every position in [1, head] no row holds.
func recordHoles(ctx context.Context, tx *sql.Tx, head int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT position FROM events ORDER BY position`)
	if err != nil {
		return err
	}
	var holes [][2]int64
	next := int64(1)
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return err
		}
		if p > next {
			holes = append(holes, [2]int64{next, p - 1})
		}
		next = p + 1
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if next <= head {
		holes = append(holes, [2]int64{next, head})
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO erased (position) VALUES (?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, h := range holes {
		for p := h[0]; p <= h[1]; p++ {
			if _, err := ins.ExecContext(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// upgradeChecksums rewrites the payload-only checksums of rows written
// before format 2 as whole-record ones, a chunk per transaction, resuming
// where an earlier run stopped. A row whose payload checksum no longer
// holds is left as it is: it was damaged before the upgrade, and stays
// reported as damaged.
func (s *Store) upgradeChecksums(ctx context.Context) error {
	if s.legacyHead == 0 || s.upgradedTo >= s.legacyHead {
		return nil
	}
	for {
		done, err := s.upgradeChunk(ctx)
		if err != nil || done {
			return err
		}
	}
}

func (s *Store) upgradeChunk(ctx context.Context) (bool, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	meta, err := readMeta(ctx, tx)
	if err != nil {
		return false, err
	}
	from, _ := strconv.ParseInt(meta["upgraded_to"], 10, 64)
	if from >= s.legacyHead {
		return true, nil
	}
	to := min(from+upgradeChunk, s.legacyHead)
	rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM events WHERE position > ? AND position <= ? ORDER BY position`, from, to)
	if err != nil {
		return false, err
	}
	type fix struct{ pos, crc int64 }
	var fixes []fix
	var r rec
	for rows.Next() {
		if err := scan(rows, &r); err != nil {
			continue // damaged beyond the checksum: reads report it
		}
		if sum := recordSum(&r); sum != r.crc && payloadSum(r.payload) == r.crc {
			fixes = append(fixes, fix{r.pos, sum})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, f := range fixes {
		if _, err := tx.ExecContext(ctx, `UPDATE events SET record_crc = ? WHERE position = ?`, f.crc, f.pos); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'upgraded_to'`, strconv.FormatInt(to, 10)); err != nil {
		return false, err
	}
	return to >= s.legacyHead, tx.Commit()
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// hasColumn reports whether the events table has a column called name.
func hasColumn(ctx context.Context, q querier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('events') WHERE name = ?`, name).Scan(&n)
	return n > 0, err
}

func readMeta(ctx context.Context, q querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// allocated is the highest position ever given out: AUTOINCREMENT keeps it
// in sqlite_sequence even when the rows at the top were erased.
func allocated(q querier) (int64, error) {
	var n int64
	err := q.QueryRowContext(context.Background(), `SELECT `+allocatedExpr).Scan(&n)
	return n, err
}

// allocatedExpr is allocated's expression, for queries that read it with
// something else.
const allocatedExpr = `max(
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
		coalesce((SELECT max(position) FROM events), 0))`

// loadMeta reads the identity and format into s. A database no writer has
// opened since identities exist has none: its identity is empty, and its
// rows are read with the checks of format 1.
func (s *Store) loadMeta(ctx context.Context) error {
	meta, err := readMeta(ctx, s.rdb)
	if err != nil {
		if isNoSuchTable(err) {
			s.legacyHead = 1<<63 - 1
			return nil
		}
		return err
	}
	s.ident.ID = meta["log_id"]
	s.ident.Created, _ = time.Parse(time.RFC3339Nano, meta["created_at"])
	s.format2 = meta["format"] == "2"
	if !s.format2 {
		s.legacyHead = 1<<63 - 1
		return nil
	}
	s.legacyHead, err = strconv.ParseInt(meta["legacy_head"], 10, 64)
	if err != nil {
		return fmt.Errorf("meta legacy_head %q: %w", meta["legacy_head"], err)
	}
	s.upgradedTo, _ = strconv.ParseInt(meta["upgraded_to"], 10, 64)
	return nil
}

func isNoSuchTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// Identity returns the log's identity; its ID is empty for a database no
// writer has opened since identities exist.
func (s *Store) Identity() Identity { return s.ident }

// LogID returns the identity of the log (see Identity); the projections
// runner records it with every checkpoint.
func (s *Store) LogID(context.Context) (string, error) { return s.ident.ID, nil }
