package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Problem is one piece of damage Verify found.
type Problem struct {
	// Kind is "checksum" (a record changed since it was written),
	// "missing" (a record the log must hold is gone), "undecodable" (a
	// record that passes its checksum but whose payload does not decode),
	// "stream" (a stream whose revisions do not follow on), "end" (a
	// stream's recorded end disagrees with its rows), "index" (SQLite's
	// index disagrees with the rows), "file" (damage
	// SQLite itself reports; records there cannot be read at all) or
	// "lost" (the log, or a session of it, that acknowledged appends went
	// to is not in the file: see guard.go).
	Kind     string `json:"kind"`
	Stream   string `json:"stream,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	Position uint64 `json:"position,omitempty"`
	Detail   string `json:"detail"`
}

func (p Problem) String() string {
	where := "the file"
	switch {
	case p.Stream != "" && p.Position != 0:
		where = fmt.Sprintf("%s@%d (position %d)", p.Stream, p.Revision, p.Position)
	case p.Stream != "":
		where = p.Stream
	case p.Position != 0:
		where = fmt.Sprintf("position %d", p.Position)
	}
	return fmt.Sprintf("%-11s %s: %s", p.Kind, where, p.Detail)
}

// Moved is a stream (or a lost position) an earlier repair moved into the
// quarantine table.
type Moved struct {
	Stream string    `json:"stream,omitempty"`
	Rows   int       `json:"rows"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Report is what Verify found.
type Report struct {
	File string   `json:"file"`
	Log  Identity `json:"log"`
	// Events counts the records read intact, tombstones included.
	Events  int    `json:"events"`
	Streams int    `json:"streams"`
	Head    uint64 `json:"head"`
	Erased  int    `json:"erased"`
	// Unknown counts events of types or versions this build does not know:
	// a newer Hermes wrote them. They are no damage.
	Unknown     int       `json:"unknown_types"`
	Problems    []Problem `json:"problems"`
	Quarantined []Moved   `json:"quarantined"`
}

// Damaged reports whether Verify found damage.
func (r *Report) Damaged() bool { return len(r.Problems) > 0 }

// Verify reads every record of the log, checks its checksum, its place and
// its payload, checks every stream's revisions and recorded end, and asks
// SQLite to check the file (PRAGMA integrity_check). It returns an error
// only when it cannot do that at all; damage goes in the report.
func (s *Store) Verify(ctx context.Context) (*Report, error) {
	rep := &Report{File: s.path, Log: s.ident, Problems: []Problem{}, Quarantined: []Moved{}}
	if e := s.lost.Load(); e != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "lost", Detail: e.Error()})
		return rep, nil
	}
	if s.noLog {
		return rep, nil
	}
	s.integrity(ctx, rep)
	if !s.format2 {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "the file predates whole-record checksums: open it with a writer (any hermes command in a writable home) to upgrade it, then verify again"})
	}
	next := map[string]uint64{}  // the revision each stream's next event must have
	ended := map[string]uint64{} // streams whose tombstone was read, at its revision
	var after uint64
	for {
		page, err := s.ReadAll(ctx, after, 1000)
		for _, r := range page {
			rep.Events++
			s.checkRecord(rep, next, ended, r)
			after = r.Position
		}
		if err != nil {
			var ce *events.CorruptEventError
			if !errors.As(err, &ce) || ce.Position <= after {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				rep.Problems = append(rep.Problems, Problem{Kind: "file", Position: after + 1,
					Detail: fmt.Sprintf("the log cannot be read on from here: %v", err)})
				break
			}
			kind := "checksum"
			if errors.Is(err, errMissing) {
				kind = "missing"
			}
			rep.Problems = append(rep.Problems, Problem{Kind: kind, Stream: ce.Stream, Revision: ce.Revision, Position: ce.Position, Detail: ce.Err.Error()})
			if ce.Stream != "" {
				if next[ce.Stream] <= ce.Revision {
					next[ce.Stream] = ce.Revision + 1
				}
			}
			after = ce.Position
			continue
		}
		if len(page) < 1000 {
			break
		}
	}
	rep.Streams = len(next)
	if err := s.checkHeads(ctx, rep, next, ended); err != nil {
		return nil, err
	}
	var err error
	if rep.Head, err = s.Head(ctx); err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: err.Error()})
	}
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM erased`).Scan(&rep.Erased); err != nil && !isNoSuchTable(err) {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "erased positions: " + err.Error()})
	}
	if err := s.moved(ctx, rep); err != nil && !isNoSuchTable(err) {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "quarantine table: " + err.Error()})
	}
	return rep, nil
}

// integrity runs SQLite's own check of the file: pages, free lists, and
// every index against its table.
func (s *Store) integrity(ctx context.Context, rep *Report) {
	rows, err := s.rdb.QueryContext(ctx, `PRAGMA integrity_check(100)`)
	if err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "integrity check: " + err.Error()})
		return
	}
	defer rows.Close()
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "integrity check: " + err.Error()})
			return
		}
		if msg == "ok" {
			continue
		}
		kind := "file"
		if strings.Contains(msg, "index") {
			kind = "index"
		}
		rep.Problems = append(rep.Problems, Problem{Kind: kind, Detail: msg})
	}
	if err := rows.Err(); err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "integrity check: " + err.Error()})
	}
}

// checkRecord checks one intact record: its payload decodes, and its
// revision follows the last one of its stream.
func (s *Store) checkRecord(rep *Report, next, ended map[string]uint64, r events.Recorded) {
	want, seen := next[r.Stream]
	if r.IsTombstone() {
		ended[r.Stream] = r.Revision
	} else if _, err := schema.Decode(r.Envelope); err != nil {
		var ute *schema.UnknownTypeError
		if errors.As(err, &ute) {
			rep.Unknown++
		} else {
			rep.Problems = append(rep.Problems, Problem{Kind: "undecodable", Stream: r.Stream, Revision: r.Revision, Position: r.Position, Detail: err.Error()})
		}
	}
	// Erasure removes a stream's events below its tombstone, so a
	// tombstone may come first; anything else must follow on.
	if !r.IsTombstone() && ((seen && r.Revision != want) || (!seen && r.Revision != 0)) {
		rep.Problems = append(rep.Problems, Problem{Kind: "stream", Stream: r.Stream, Revision: want, Position: r.Position,
			Detail: fmt.Sprintf("revision %d is missing: the next event read has revision %d", want, r.Revision)})
	}
	if r.Revision+1 > want || !seen {
		next[r.Stream] = r.Revision + 1
	}
}

// checkHeads compares the streams table with the streams the log holds.
func (s *Store) checkHeads(ctx context.Context, rep *Report, next, ended map[string]uint64) error {
	if !s.format2 {
		return nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT stream, last, deleted FROM streams`)
	if err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "streams table: " + err.Error()})
		return nil
	}
	defer rows.Close()
	known := map[string]bool{}
	for rows.Next() {
		var name string
		var st streamState
		if err := rows.Scan(&name, &st.last, &st.deleted); err != nil {
			rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "streams table: " + err.Error()})
			return nil
		}
		known[name] = true
		n, ok := next[name]
		_, gone := ended[name]
		if !ok || n != st.last+1 || gone != st.deleted {
			rep.Problems = append(rep.Problems, Problem{Kind: "end", Stream: name, Revision: st.last,
				Detail: fmt.Sprintf("its recorded end (%s) is not where its events end (%d events read, deleted %v)", stateOf(st), n, gone)})
		}
	}
	if err := rows.Err(); err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: "file", Detail: "streams table: " + err.Error()})
		return nil
	}
	var missing []string
	for name := range next {
		if !known[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		rep.Problems = append(rep.Problems, Problem{Kind: "end", Stream: name, Detail: "the stream has events but no recorded end"})
	}
	return nil
}

func stateOf(st streamState) string {
	st.exists = true
	return st.String()
}

func (s *Store) moved(ctx context.Context, rep *Report) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT coalesce(CAST(stream AS TEXT), ''), count(*), min(reason), max(moved_ns) FROM quarantine GROUP BY 1 ORDER BY 4`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var m Moved
		var ns int64
		if err := rows.Scan(&m.Stream, &m.Rows, &m.Reason, &ns); err != nil {
			return err
		}
		m.At = time.Unix(0, ns).UTC()
		rep.Quarantined = append(rep.Quarantined, m)
	}
	return rows.Err()
}

// Repair is what Quarantine did.
type Repair struct {
	// Moved lists the streams moved into the quarantine table, each with
	// the rows it had and the damage that condemned it.
	Moved []Moved `json:"moved"`
	// Lost lists positions that were missing and are now recorded as
	// erased (a row for each stands in the quarantine table).
	Lost []uint64 `json:"lost"`
	// Reindexed is set when the indexes and the streams' recorded ends
	// were rebuilt from the rows.
	Reindexed bool `json:"reindexed"`
	// Left lists damage a repair cannot move: damage SQLite reports in the
	// file itself. The file must be restored from a copy.
	Left []Problem `json:"left"`
}

// recordEnds rebuilds the streams table from the rows: each stream's last
// revision, and whether a tombstone ends it.
func recordEnds(ctx context.Context, tx txLike) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM streams`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO streams (stream, last, deleted)
		SELECT stream, max(revision), 0 FROM events GROUP BY stream`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE streams SET deleted = 1 WHERE EXISTS (SELECT 1 FROM events e
		WHERE e.stream = streams.stream AND e.revision = streams.last AND e.type = ?)`, events.StreamDeletedType)
	return err
}

// Quarantine moves what Verify reports as damaged out of the log, into
// the quarantine table of the same file, so that the log reads clean: the
// whole stream of every damaged record (a session's fold cannot be
// trusted with a hole), which gets a tombstone, so that projections drop
// it and nothing is appended to it again. Nothing is deleted outright: the
// rows are copied as they are, bytes and all, before they leave the
// events table. Positions lost with no stream to name are recorded as
// erased. Index damage is repaired by rebuilding the indexes from the
// rows. It runs in one transaction of the writer.
func (s *Store) Quarantine(ctx context.Context, rep *Report) (*Repair, error) {
	out := &Repair{Moved: []Moved{}, Lost: []uint64{}, Left: []Problem{}}
	reasons := map[string]string{}
	positions := map[string][]uint64{}
	var order, ends []string
	for _, p := range rep.Problems {
		if p.Kind == "end" && p.Stream != "" {
			ends = append(ends, p.Stream)
		}
		switch {
		case p.Kind == "index" || p.Kind == "end":
			// The rows, each under its checksum, are the truth the
			// index and the recorded ends are rebuilt from.
			out.Reindexed = true
		case p.Kind == "file":
			out.Left = append(out.Left, p)
		case p.Stream != "":
			if _, ok := reasons[p.Stream]; !ok {
				order = append(order, p.Stream)
				reasons[p.Stream] = p.String()
			}
			if p.Position != 0 {
				positions[p.Stream] = append(positions[p.Stream], p.Position)
			}
		case p.Position != 0:
			out.Lost = append(out.Lost, p.Position)
		}
	}
	if len(order) == 0 && len(out.Lost) == 0 && !out.Reindexed {
		return out, nil
	}
	err := s.exclusive(ctx, func(tx txLike) error {
		now := time.Now().UnixNano()
		for _, stream := range order {
			n, err := s.moveStream(ctx, tx, stream, positions[stream], reasons[stream], now)
			if err != nil {
				return fmt.Errorf("move %s: %w", stream, err)
			}
			out.Moved = append(out.Moved, Moved{Stream: stream, Rows: n, Reason: reasons[stream], At: time.Unix(0, now).UTC()})
		}
		for _, p := range out.Lost {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO quarantine (position, reason, moved_ns) VALUES (?, ?, ?)`,
				int64(p), "missing from the log: recorded as lost", now); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO erased (position) VALUES (?)`, int64(p)); err != nil {
				return err
			}
		}
		// A stream recorded as erased whose tombstone is gone (moved
		// aside as damaged) gets a new one: an erasure is never undone.
		for _, stream := range ends {
			var st streamState
			var rows int
			if err := tx.QueryRowContext(ctx, streamHead, stream).Scan(&st.last, &st.deleted); err != nil || !st.deleted {
				continue
			}
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE stream = ?`, stream).Scan(&rows); err != nil {
				return err
			}
			if rows == 0 {
				if _, err := s.tombstone(tx, stream, st.last+1); err != nil {
					return err
				}
			}
		}
		if len(order) > 0 || out.Reindexed {
			out.Reindexed = true
			if _, err := tx.ExecContext(ctx, `REINDEX events`); err != nil {
				return fmt.Errorf("rebuild the indexes: %w", err)
			}
			if err := recordEnds(ctx, tx); err != nil {
				return fmt.Errorf("rebuild the streams' recorded ends: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", s.path, err)
	}
	return out, nil
}

// moveStream copies every row of stream (found through the index and
// through the rows themselves, plus the damaged positions named) into the
// quarantine table, records their positions as erased, deletes them and
// leaves a tombstone (a new one when the stream's own was damaged). It
// returns how many rows it moved.
func (s *Store) moveStream(ctx context.Context, tx txLike, stream string, damaged []uint64, reason string, now int64) (int, error) {
	set, damagedAt := map[int64]bool{}, map[int64]bool{}
	for _, p := range damaged {
		set[int64(p)], damagedAt[int64(p)] = true, true
	}
	for _, q := range []string{
		`SELECT position FROM events WHERE stream = ?`,
		`SELECT position FROM events NOT INDEXED WHERE stream = ?`,
	} {
		rows, err := tx.QueryContext(ctx, q, stream)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var p int64
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return 0, err
			}
			set[p] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	last := int64(-1)
	n, intact := 0, 0
	for p := range set {
		var rev sql.NullInt64
		var typ sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT revision, type FROM events WHERE position = ?`, p).Scan(&rev, &typ)
		if errors.Is(err, sql.ErrNoRows) {
			// Missing: it stays recorded as lost.
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO quarantine (position, stream, reason, moved_ns) VALUES (?, ?, ?, ?)`,
				p, stream, "missing from the log: "+reason, now); err != nil {
				return 0, err
			}
		} else if err != nil {
			return 0, err
		} else {
			if typ.String == events.StreamDeletedType && !damagedAt[p] {
				continue // an intact tombstone stays: it is the record of an erasure
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO quarantine SELECT `+columns+`, ?, ? FROM events WHERE position = ?`, reason, now, p); err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE position = ?`, p); err != nil {
				return 0, err
			}
			if rev.Valid {
				last = max(last, rev.Int64)
			}
			n++
			if !damagedAt[p] {
				intact++
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO erased (position) VALUES (?)`, p); err != nil {
			return 0, err
		}
	}
	var st streamState
	err := tx.QueryRowContext(ctx, streamHead, stream).Scan(&st.last, &st.deleted)
	if errors.Is(err, sql.ErrNoRows) && intact == 0 {
		// Known only from the columns of damaged rows: no such stream
		// was ever written, and none gets a tombstone.
		return n, nil
	} else if err == nil {
		last = max(last, int64(st.last))
	}
	var tombs int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE stream = ? AND type = ?`, stream, events.StreamDeletedType).Scan(&tombs); err != nil {
		return 0, err
	}
	if tombs > 0 {
		return n, nil // erased before, and its tombstone is intact
	}
	// The tombstone's revision is above every revision the stream had (or
	// the damaged rows claim), so that it cannot meet one of them.
	var maxRev sql.NullInt64
	tx.QueryRowContext(ctx, `SELECT max(revision) FROM events WHERE stream = ?`, stream).Scan(&maxRev)
	if maxRev.Valid {
		last = max(last, maxRev.Int64)
	}
	if _, err := s.tombstone(tx, stream, uint64(last+1)); err != nil {
		return 0, err
	}
	return n, nil
}

// exclusive runs fn in a transaction of the writer goroutine, alone: the
// appends queued with it are written before it, and the writer forgets
// what it knew of streams and positions after it.
func (s *Store) exclusive(ctx context.Context, fn func(tx txLike) error) error {
	_, err := s.submit(ctx, &request{ctx: ctx, fn: fn})
	return err
}
