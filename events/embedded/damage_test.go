package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// damageFixture writes a realistic log of a few hundred events (sessions
// with messages and tool results, one payload spilling over several pages,
// one erased session) and closes it, so that the file holds everything.
func damageFixture(t testing.TB, path string) (streams []string, deleted string) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(42, 7))
	for i := range 12 {
		sid := fmt.Sprintf("%08x-5c1e-4a7b-9f3e-%012x", i*7919, i)
		stream := events.SessionStream(sid)
		streams = append(streams, stream)
		m := schema.Meta{SessionID: sid, TurnID: "t0"}
		evs := []schema.Envelope{
			schema.MustEnvelope(m, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Reason: schema.StartNew}),
			schema.MustEnvelope(m, schema.SystemPromptBuilt{Content: "You are Hermes."}),
		}
		for turn := range 8 {
			m.TurnID = fmt.Sprintf("t%d", turn+1)
			content := fmt.Sprintf("turn %d of %s: %s", turn, sid, strings.Repeat("words and more words ", rng.IntN(20)))
			if i == 3 && turn == 2 {
				content = strings.Repeat("a long tool output line\n", 700) // overflow pages
			}
			evs = append(evs,
				schema.MustEnvelope(m, schema.UserMessageAdded{Content: content}),
				schema.MustEnvelope(m, schema.ToolResultAdded{CallID: fmt.Sprintf("call_%d", turn), Name: "terminal", Content: content}),
				schema.MustEnvelope(m, schema.AssistantMessageAdded{Content: "done", FinishReason: "stop", Model: "gpt-4o-mini",
					Usage: schema.Usage{PromptTokens: int64(100 + turn), CompletionTokens: 7}}))
		}
		// Appended in a few batches, interleaved with the other sessions
		// through the positions they get.
		for len(evs) > 0 {
			n := min(len(evs), 1+rng.IntN(6))
			if _, err := s.Append(ctx, stream, events.Any, evs[:n]...); err != nil {
				t.Fatal(err)
			}
			evs = evs[n:]
		}
	}
	deleted = streams[5]
	if err := s.DeleteStream(ctx, deleted, events.Any); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the closed store left a WAL behind: the copies would miss data")
	}
	return streams, deleted
}

// rawRows reads the events table with plain SQL, no index, no check: what
// the file holds. Values keep the types SQLite returns them with.
func rawRows(path string) ([][]any, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT ` + columns + ` FROM events NOT INDEXED ORDER BY position`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, 12)
		ptrs := make([]any, 12)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return out, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// logView is everything the store returns for a file: the global log,
// every stream and the head.
type logView struct {
	all     []events.Recorded
	streams map[string][]events.Recorded
	back    map[string][]events.Recorded
	head    uint64
}

// readEverything reads all there is through the store. errs collects every
// error a read returned; a read that fails contributes no data.
func readEverything(path string, streams []string, deleted string) (v logView, errs []error) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		return v, []error{err}
	}
	defer s.Close()
	v.streams, v.back = map[string][]events.Recorded{}, map[string][]events.Recorded{}
	var after uint64
	for {
		page, err := s.ReadAll(ctx, after, 64)
		if err != nil {
			errs = append(errs, err)
			// Resume after the damage, as the projections runner does.
			var ce *events.CorruptEventError
			if !errors.As(err, &ce) || ce.Position <= after {
				break
			}
			v.all = append(v.all, page...)
			after = ce.Position
			continue
		}
		v.all = append(v.all, page...)
		if len(page) < 64 {
			break
		}
		after = page[len(page)-1].Position
	}
	for _, st := range streams {
		rs, err := s.ReadStream(ctx, st, events.Forward, 0, 0)
		if st == deleted {
			if !errors.Is(err, events.ErrStreamDeleted) {
				errs = append(errs, fmt.Errorf("deleted stream reads as %d events, %v", len(rs), err))
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
		} else {
			v.streams[st] = rs
		}
		rs, err = s.ReadStream(ctx, st, events.Backward, events.End, 5)
		if err != nil {
			errs = append(errs, err)
		} else {
			v.back[st] = rs
		}
	}
	if v.head, err = s.Head(ctx); err != nil {
		errs = append(errs, err)
	}
	return v, errs
}

// TestByteFlips flips one random byte of a real events.db, on a fresh copy
// each time, and reads everything back through the store. Whatever a read
// returns without an error must be exactly what was written: every flip
// that changed the rows (as plain SQL reads them) must make some read fail,
// with the stream and position of the damage or SQLite's own error.
// HERMES_FLIPS sets the number of trials, HERMES_FLIP_SEED the seed.
func TestByteFlips(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	streams, deleted := damageFixture(t, orig)
	want, errs := readEverything(orig, streams, deleted)
	if len(errs) > 0 {
		t.Fatalf("the undamaged file: %v", errs)
	}
	wantRaw, err := rawRows(orig)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.all) < 250 || len(want.all) != len(wantRaw) {
		t.Fatalf("fixture holds %d events (%d rows)", len(want.all), len(wantRaw))
	}
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	trials := 200
	if n, err := strconv.Atoi(os.Getenv("HERMES_FLIPS")); err == nil {
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if n, err := strconv.ParseUint(os.Getenv("HERMES_FLIP_SEED"), 10, 64); err == nil {
		seed = n
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("%d events in %d bytes (%d pages); %d flips, HERMES_FLIP_SEED=%d", len(want.all), len(data), len(data)/4096, trials, seed)

	var changed, changedReported, otherReported, unchanged int
	var verified, repaired, leftFile int
	kinds := map[string]int{}
	copyPath := filepath.Join(dir, "copy.db")
	for trial := range trials {
		off := rng.IntN(len(data))
		x := byte(1 + rng.IntN(255))
		flipped := append([]byte(nil), data...)
		flipped[off] ^= x
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(copyPath + suffix)
		}
		if err := os.WriteFile(copyPath, flipped, 0o600); err != nil {
			t.Fatal(err)
		}
		raw, rawErr := rawRows(copyPath)
		rowsChanged := rawErr != nil || !reflect.DeepEqual(raw, wantRaw)
		got, errs := readEverything(copyPath, streams, deleted)

		// Whatever was returned without an error must be what was written.
		var silent []string
		if !prefixOf(got.all, want.all) {
			silent = append(silent, "global log")
		}
		for st, rs := range got.streams {
			if !reflect.DeepEqual(rs, want.streams[st]) {
				silent = append(silent, st)
			}
		}
		for st, rs := range got.back {
			if !reflect.DeepEqual(rs, want.back[st]) {
				silent = append(silent, st+" backwards")
			}
		}
		if len(errs) == 0 && len(got.all) != len(want.all) {
			silent = append(silent, fmt.Sprintf("global log holds %d events, not %d", len(got.all), len(want.all)))
		}
		where := fmt.Sprintf("offset %d (page %d, type 0x%02x) ^= 0x%02x", off, off/4096+1, data[off/4096*4096+pageHeader(off)], x)
		if len(silent) > 0 {
			t.Errorf("trial %d, %s: read back different data without an error: %v", trial, where, silent)
			continue
		}
		if len(errs) > 0 {
			v, r, l := verifyAndRepair(t, copyPath, trial, where)
			verified, repaired, leftFile = verified+v, repaired+r, leftFile+l
		}
		switch {
		case rowsChanged && len(errs) > 0:
			changed++
			changedReported++
			kinds[errKind(errs[0])]++
		case rowsChanged:
			changed++
			t.Errorf("trial %d, %s: the rows changed (%v) but every read succeeded", trial, where, rawErr)
		case len(errs) > 0:
			otherReported++
			kinds[errKind(errs[0])]++
		default:
			unchanged++
		}
	}
	t.Logf("byte flips: %d tried; %d changed the rows, %d of them reported; %d changed other things and were reported; %d changed nothing read",
		trials, changed, changedReported, otherReported, unchanged)
	t.Logf("first error of reported flips by kind: %v", kinds)
	t.Logf("of the %d reported: verify found damage in %d; repair --quarantine left %d reading clean, %d with damage in the file itself (SQLite's pages)",
		changedReported+otherReported, verified, repaired, leftFile)
}

// verifyAndRepair runs Verify on a damaged file the reads reported, then
// Quarantine, then Verify again. Verify must see what the reads saw; after
// the repair the log must verify and read clean, unless the damage is in
// SQLite's own pages, which no repair of records can mend.
func verifyAndRepair(t *testing.T, path string, trial int, where string) (verified, repaired, leftFile int) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		return 1, 0, 1 // unopenable: SQLite's own error, reported
	}
	defer s.Close()
	rep, err := s.Verify(ctx)
	if err != nil {
		t.Errorf("trial %d, %s: verify: %v", trial, where, err)
		return
	}
	if !rep.Damaged() {
		t.Errorf("trial %d, %s: reads failed but verify found nothing", trial, where)
		return
	}
	fix, err := s.Quarantine(ctx, rep)
	if err != nil {
		return 1, 0, 1
	}
	if len(fix.Left) > 0 {
		return 1, 0, 1
	}
	after, err := s.Verify(ctx)
	if err != nil || after.Damaged() {
		t.Errorf("trial %d, %s: after repair %+v: %v %v", trial, where, fix, err, after.Problems)
		return 1, 0, 0
	}
	var pos uint64
	for {
		page, err := s.ReadAll(ctx, pos, 100)
		if err != nil {
			t.Errorf("trial %d, %s: the repaired log does not read: %v", trial, where, err)
			return 1, 0, 0
		}
		if len(page) < 100 {
			break
		}
		pos = page[len(page)-1].Position
	}
	return 1, 1, 0
}

// pageHeader is the offset of the b-tree page header within the page that
// holds off (page 1 starts with the 100-byte file header).
func pageHeader(off int) int {
	if off < 4096 {
		return 100
	}
	return 0
}

func prefixOf(got, want []events.Recorded) bool {
	// Reads resume after damage, so what was read is want with some
	// events left out, in order.
	j := 0
	for _, g := range got {
		for j < len(want) && want[j].Position != g.Position {
			j++
		}
		if j == len(want) || !reflect.DeepEqual(g, want[j]) {
			return false
		}
		j++
	}
	return true
}

func errKind(err error) string {
	var ce *events.CorruptEventError
	switch msg := err.Error(); {
	case errors.As(err, &ce) && errors.Is(err, errChecksum):
		return "checksum"
	case errors.As(err, &ce) && errors.Is(err, errMissing):
		return "missing from the log"
	case errors.As(err, &ce) && strings.Contains(msg, "missing from the stream"):
		return "missing from a stream"
	case errors.As(err, &ce):
		return "other damage named"
	case strings.Contains(msg, "malformed") || strings.Contains(msg, "not a database") || strings.Contains(msg, "corrupt"):
		return "sqlite corruption"
	default:
		return "other: " + firstLine(msg)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
