package embedded

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/internal/sqlite"
)

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqlite.DSN(path, "", "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// twoSessions writes session-x (5 events, positions 1, 3, 5, 7, 9) and
// session-y (5 events, positions 2, 4, ...).
func twoSessions(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 5 {
		for _, sid := range []string{"x", "y"} {
			if _, err := s.Append(ctx, "session-"+sid, events.Any, storetest.Event(sid, fmt.Sprintf("%s %d", sid, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestChecksumCoversEveryColumn changes one column of one row with plain
// SQL, as damage or a careless hand would: every read that meets the row
// reports it with its stream and position. Before whole-record checksums,
// a changed session id made a phantom session and was read back silently.
func TestChecksumCoversEveryColumn(t *testing.T) {
	for _, c := range []struct{ column, value string }{
		{"stream", "'session-z'"}, {"revision", "7"}, {"id", "'00000000-0000-4000-8000-000000000000'"},
		{"type", "'ToolResultAdded'"}, {"version", "version + 1"}, {"session_id", "'z'"}, {"time_ns", "time_ns + 1"},
		{"turn_id", "'t9'"}, {"causation_id", "'c'"}, {"payload", `'{"content":"x 3!"}'`}, {"record_crc", "record_crc + 1"},
		{"position", "100"},
	} {
		t.Run(c.column, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			twoSessions(t, s)
			if _, err := rawDB(t, path).Exec(`UPDATE events SET ` + c.column + ` = ` + c.value + ` WHERE position = 7`); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rs, err := s.ReadAll(ctx, 0, 100)
			var ce *events.CorruptEventError
			if !errors.As(err, &ce) {
				t.Fatalf("global read: %d events, %v", len(rs), err)
			}
			if ce.Position != 7 || len(rs) != 6 {
				t.Fatalf("global read names position %d after %d events: %v", ce.Position, len(rs), err)
			}
			// An UPDATE keeps the index in step, so a changed stream or
			// revision is what both say; a flipped byte would leave the
			// index naming the true owner.
			wantStream, wantRev := "session-x", uint64(3)
			switch c.column {
			case "stream":
				wantStream = "session-z"
			case "revision":
				wantRev = 7
			}
			if c.column != "position" && (ce.Stream != wantStream || ce.Revision != wantRev) {
				t.Fatalf("global read names %s@%d: %v", ce.Stream, ce.Revision, err)
			}
			if !strings.Contains(err.Error(), "(position 7)") {
				t.Fatalf("message: %v", err)
			}
			// The rest of the log reads on after the damage.
			if rest, err := s.ReadAll(ctx, 7, 100); c.column != "position" && (err != nil || len(rest) != 3) {
				t.Fatalf("after the damage: %d events, %v", len(rest), err)
			}
			_, err = s.ReadStream(ctx, "session-x", events.Forward, 0, 0)
			if !errors.As(err, &ce) || ce.Stream != "session-x" || ce.Revision != 3 {
				t.Fatalf("stream read: %v", err)
			}
			if _, err := s.ReadStream(ctx, "session-y", events.Forward, 0, 0); err != nil && c.column != "stream" {
				t.Fatalf("the other stream: %v", err)
			}
		})
	}
}

// TestLostRowsAreReported deletes rows behind the store's back: a row in
// the middle, and the last one. Neither may read as an erased event.
func TestLostRowsAreReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoSessions(t, s)
	ctx := context.Background()
	// A real erasure is not damage.
	if err := s.DeleteStream(ctx, "session-y", events.Any); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.ReadAll(ctx, 0, 100); err != nil || len(rs) != 6 {
		t.Fatalf("after an erasure: %d events, %v", len(rs), err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec(`DELETE FROM events WHERE position = 5`); err != nil {
		t.Fatal(err)
	}
	rs, err := s.ReadAll(ctx, 0, 100)
	var ce *events.CorruptEventError
	if !errors.As(err, &ce) || ce.Position != 5 || !errors.Is(err, errMissing) || len(rs) != 2 {
		t.Fatalf("lost row: %d events, %v", len(rs), err)
	}
	// The index lost it too (a DELETE keeps them in step): the stream that
	// falls short of its recorded end is named.
	if ce.Stream != "session-x" || ce.Revision != 2 {
		t.Fatalf("lost row named as %s@%d", ce.Stream, ce.Revision)
	}
	if _, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0); !errors.As(err, &ce) || ce.Revision != 2 {
		t.Fatalf("stream with a lost row: %v", err)
	}
	// The last row of the log: nothing after it to show the hole but the
	// positions given out.
	if _, err := db.Exec(`DELETE FROM events WHERE position = (SELECT max(position) FROM events)`); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.ReadAll(ctx, 5, 100); !errors.As(err, &ce) || ce.Position != 11 {
		t.Fatalf("lost last row: %d events, %v", len(rs), err)
	}
}

// oldDDL is the events table as Hermes created it before whole-record
// checksums: rows carried the CRC-32C of their payload alone.
const oldDDL = `CREATE TABLE events (
	position INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL,
	type TEXT NOT NULL, version INTEGER NOT NULL, session_id TEXT NOT NULL, time_ns INTEGER NOT NULL,
	turn_id TEXT NOT NULL, causation_id TEXT NOT NULL, payload BLOB NOT NULL, crc INTEGER NOT NULL,
	UNIQUE (stream, revision))`

// oldHome writes a database the way the previous format did: 12 events of
// two sessions, one erased (leaving a tombstone and holes), and one row
// whose payload was damaged before the upgrade.
func oldHome(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", sqlite.DSN(path, "", "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(oldDDL); err != nil {
		t.Fatal(err)
	}
	rev := map[string]int{}
	for i := range 12 {
		stream := []string{"session-a", "session-b"}[i%2]
		e := storetest.Event(stream[8:], fmt.Sprintf("old %d", i))
		if _, err := db.Exec(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, stream, rev[stream], e.ID, e.Type, e.Version, e.SessionID, e.Time.UnixNano(), e.TurnID, "",
			[]byte(e.Payload), payloadSum(e.Payload)); err != nil {
			t.Fatal(err)
		}
		rev[stream]++
	}
	// The old DeleteStream: a tombstone, then the stream's rows go.
	if _, err := db.Exec(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc)
		VALUES ('session-b', 6, 'tomb', ?, 1, 'b', 1, '', '', '{}', ?)`, events.StreamDeletedType, payloadSum([]byte("{}"))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM events WHERE stream = 'session-b' AND revision < 6`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET payload = '{"content":"tampered"}' WHERE stream = 'session-a' AND revision = 4`); err != nil {
		t.Fatal(err)
	}
}

// TestOldDatabaseIsUpgraded opens a database of the payload-only format:
// it keeps working, gets an identity, its holes are recorded as erased,
// its intact rows get whole-record checksums, and the row damaged before
// the upgrade stays reported.
func TestOldDatabaseIsUpgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	oldHome(t, path)

	// A read-only open changes nothing and reads with the old checks.
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rs, err := ro.ReadAll(ctx, 0, 100)
	var ce *events.CorruptEventError
	if !errors.As(err, &ce) || ce.Position != 9 || len(rs) != 4 || ro.Identity().ID != "" {
		t.Fatalf("read-only open of an old file: %d events, %v, identity %q", len(rs), err, ro.Identity().ID)
	}
	ro.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := s.Identity()
	if id.ID == "" || time.Since(id.Created) > time.Minute {
		t.Fatalf("identity of an upgraded file: %+v", id)
	}
	rs, err = s.ReadAll(ctx, 0, 100)
	if !errors.As(err, &ce) || ce.Position != 9 || ce.Stream != "session-a" || len(rs) != 4 {
		t.Fatalf("damaged old row after the upgrade: %d events, %v", len(rs), err)
	}
	rest, err := s.ReadAll(ctx, 9, 100)
	if err != nil || len(rest) != 2 || !rest[1].IsTombstone() {
		t.Fatalf("the rest of an upgraded log: %d events, %v", len(rest), err)
	}
	if _, err := s.ReadStream(ctx, "session-b", events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("erased stream of an upgraded log: %v", err)
	}
	// Intact rows now carry the checksum of the whole record.
	db := rawDB(t, path)
	rows, err := db.Query(`SELECT ` + columns + ` FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r rec
		if err := scan(rows, &r); err != nil {
			t.Fatal(err)
		}
		if whole := recordSum(&r) == r.crc; whole == (r.pos == 9) {
			t.Errorf("position %d: whole-record checksum %v", r.pos, whole)
		}
	}
	rows.Close()
	var erased int
	db.QueryRow(`SELECT count(*) FROM erased`).Scan(&erased)
	if erased != 6 {
		t.Fatalf("%d erased positions recorded, want 6", erased)
	}
	// Appends go on at the next position, and the identity stays.
	res, err := s.Append(ctx, "session-a", events.Exact(5), storetest.Event("a", "new"))
	if err != nil || res.Position != 14 {
		t.Fatalf("append to an upgraded log: %+v, %v", res, err)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Identity() != id {
		t.Fatalf("identity changed on reopen: %+v, was %+v", s.Identity(), id)
	}
}

func TestEveryLogHasItsOwnIdentity(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(filepath.Join(dir, "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	ida, idb := a.Identity(), b.Identity()
	a.Close()
	b.Close()
	if ida.ID == "" || ida.ID == idb.ID {
		t.Fatalf("identities %q and %q", ida.ID, idb.ID)
	}
	ro, err := OpenReadOnly(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if id, _ := ro.LogID(context.Background()); id != ida.ID {
		t.Fatalf("read-only open sees identity %q, want %q", id, ida.ID)
	}
}

// TestReadOnlyOpenWritesNothing reads a log opened read-only: everything
// reads, appends are refused, and the file is byte for byte unchanged.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	twoSessions(t, s)
	s.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if rs, err := ro.ReadAll(ctx, 0, 100); err != nil || len(rs) != 10 {
		t.Fatalf("read-only ReadAll: %d, %v", len(rs), err)
	}
	if rs, err := ro.ReadStream(ctx, "session-x", events.Forward, 0, 0); err != nil || len(rs) != 5 {
		t.Fatalf("read-only ReadStream: %d, %v", len(rs), err)
	}
	if _, err := ro.Append(ctx, "session-x", events.Any, storetest.Event("x", "no")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("append to a read-only store: %v", err)
	}
	if err := ro.DeleteStream(ctx, "session-x", events.Any); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete in a read-only store: %v", err)
	}
	ro.Close()
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("a read-only open changed the file")
	}

	// An empty file (a log emptied in place) reads as an empty log.
	empty := filepath.Join(t.TempDir(), "events.db")
	os.WriteFile(empty, nil, 0o600)
	ro, err = OpenReadOnly(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if head, err := ro.Head(ctx); err != nil || head != 0 {
		t.Fatalf("head of an empty file: %d, %v", head, err)
	}
}

// TestVerifyAndQuarantine damages a stream in two ways (a changed row and
// a lost one): Verify names both, Quarantine moves the streams aside with
// a tombstone each and the log verifies clean, with every moved row kept
// byte for byte in the quarantine table.
func TestVerifyAndQuarantine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoSessions(t, s)
	ctx := context.Background()
	if _, err := s.Append(ctx, "session-z", events.Any, storetest.Event("z", "z0"), storetest.Event("z", "z1")); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if err != nil || rep.Damaged() || rep.Events != 12 || rep.Streams != 3 || rep.Log.ID == "" {
		t.Fatalf("clean log: %+v, %v", rep, err)
	}
	db := rawDB(t, path)
	var before []byte
	db.QueryRow(`SELECT payload FROM events WHERE position = 3`).Scan(&before)
	if _, err := db.Exec(`UPDATE events SET session_id = 'phantom' WHERE position = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM events WHERE position = 6`); err != nil {
		t.Fatal(err)
	}
	rep, err = s.Verify(ctx)
	if err != nil || !rep.Damaged() {
		t.Fatalf("damaged log verified: %+v, %v", rep, err)
	}
	var kinds []string
	for _, p := range rep.Problems {
		kinds = append(kinds, p.String())
	}
	got := strings.Join(kinds, "\n")
	for _, want := range []string{"checksum    session-x@1 (position 3)", "missing     session-y@2 (position 6)"} {
		if !strings.Contains(got, want) {
			t.Errorf("verify does not say %q:\n%s", want, got)
		}
	}
	fix, err := s.Quarantine(ctx, rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(fix.Moved) != 2 || fix.Moved[0].Stream != "session-x" || fix.Moved[0].Rows != 5 || fix.Moved[1].Rows != 4 || len(fix.Lost) != 0 {
		t.Fatalf("repair: %+v", fix)
	}
	rep, err = s.Verify(ctx)
	if err != nil || rep.Damaged() {
		t.Fatalf("after the repair: %+v, %v", rep.Problems, err)
	}
	if len(rep.Quarantined) < 2 {
		t.Fatalf("verify does not list what was moved: %+v", rep.Quarantined)
	}
	for _, st := range []string{"session-x", "session-y"} {
		if _, err := s.ReadStream(ctx, st, events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
			t.Fatalf("%s after the repair: %v", st, err)
		}
	}
	if rs, err := s.ReadStream(ctx, "session-z", events.Forward, 0, 0); err != nil || len(rs) != 2 {
		t.Fatalf("the healthy stream after the repair: %d, %v", len(rs), err)
	}
	var kept []byte
	var sid string
	if err := db.QueryRow(`SELECT payload, session_id FROM quarantine WHERE position = 3`).Scan(&kept, &sid); err != nil || !bytes.Equal(kept, before) || sid != "phantom" {
		t.Fatalf("the damaged row was not kept as it was: %q %q %v", kept, sid, err)
	}
	// Appends go on, and not to the moved streams.
	if _, err := s.Append(ctx, "session-x", events.Any, storetest.Event("x", "again")); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("append to a moved stream: %v", err)
	}
	if _, err := s.Append(ctx, "session-z", events.Exact(1), storetest.Event("z", "z2")); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.ReadAll(ctx, 0, 100); err != nil {
		t.Fatalf("the log after the repair: %d, %v", len(rs), err)
	}
}

// TestQuarantineOfADamagedTombstone: the tombstone of an erased stream is
// damaged (found by the byte-flip test: its stream name). The repair moves
// it aside and writes a new one, and the log verifies clean.
func TestQuarantineOfADamagedTombstone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoSessions(t, s)
	ctx := context.Background()
	if err := s.DeleteStream(ctx, "session-y", events.Any); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec(`UPDATE events SET stream = 'session-Y' WHERE type = ?`, events.StreamDeletedType); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if err != nil || !rep.Damaged() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if _, err := s.Quarantine(ctx, rep); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Verify(ctx); err != nil || rep.Damaged() {
		t.Fatalf("after the repair: %v, %v", rep.Problems, err)
	}
	if _, err := s.ReadStream(ctx, "session-y", events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("the erased stream after the repair: %v", err)
	}
	if _, err := s.ReadStream(ctx, "session-Y", events.Forward, 0, 0); err != nil {
		t.Fatalf("the name only the damaged row had: %v", err)
	}
}

// TestQuarantineRebuildsLostEnds: the streams table loses a stream's row
// (found by the byte-flip test: a flipped key in its page). Reads of the
// stream report it; the repair rebuilds the recorded ends from the rows and
// moves nothing.
func TestQuarantineRebuildsLostEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoSessions(t, s)
	ctx := context.Background()
	if _, err := rawDB(t, path).Exec(`UPDATE streams SET stream = 'session-q' WHERE stream = 'session-x'`); err != nil {
		t.Fatal(err)
	}
	var ce *events.CorruptEventError
	if _, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0); !errors.As(err, &ce) {
		t.Fatalf("a stream without its recorded end: %v", err)
	}
	rep, err := s.Verify(ctx)
	if err != nil || len(rep.Problems) != 2 || rep.Problems[0].Kind != "end" {
		t.Fatalf("verify: %+v, %v", rep.Problems, err)
	}
	fix, err := s.Quarantine(ctx, rep)
	if err != nil || len(fix.Moved) != 0 || !fix.Reindexed {
		t.Fatalf("repair: %+v, %v", fix, err)
	}
	if rep, err := s.Verify(ctx); err != nil || rep.Damaged() {
		t.Fatalf("after the repair: %v, %v", rep.Problems, err)
	}
	if rs, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0); err != nil || len(rs) != 5 {
		t.Fatalf("the stream after the repair: %d, %v", len(rs), err)
	}
	if _, err := s.Append(ctx, "session-x", events.Exact(4), storetest.Event("x", "x5")); err != nil {
		t.Fatal(err)
	}
}

// TestOlderWriterIsTurnedAway: a Hermes from before whole-record checksums
// appending to an upgraded file would write rows that read as damage; its
// inserts (and reads) name a checksum column the upgrade renamed, and fail.
func TestOlderWriterIsTurnedAway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	twoSessions(t, s)
	s.Close()
	e := storetest.Event("x", "from an old hermes")
	_, err = rawDB(t, path).Exec(`INSERT INTO events (stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc)
		VALUES ('session-x', 5, ?, ?, 1, 'x', 1, '', '', ?, ?)`, e.ID, e.Type, []byte(e.Payload), payloadSum(e.Payload))
	if err == nil || !strings.Contains(err.Error(), "no column named crc") {
		t.Fatalf("an old writer's insert: %v", err)
	}
}
