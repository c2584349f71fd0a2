package projections_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

type env struct {
	store *embedded.Store
	db    *projections.DB
	run   *projections.Runner
}

func openEnv(t *testing.T, dir string, models ...projections.Model) *env {
	t.Helper()
	return openEnvOn(t, sqliteDB, dir, filepath.Join(dir, "projections.db"), models...)
}

func newEnv(t *testing.T, dir string, db *projections.DB, models ...projections.Model) *env {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events.db"), embedded.WithPollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(models) == 0 {
		models = []projections.Model{sessions.NewModel(), history.NewModel()}
	}
	var ps []projections.Projection
	for _, m := range models {
		ps = append(ps, db.Projection(m))
	}
	e := &env{store: store, db: db, run: projections.NewRunner(store, zerolog.Nop(), ps...)}
	t.Cleanup(func() { db.Close(); store.Close() })
	return e
}

func dump(t *testing.T, db *projections.Reader) string {
	t.Helper()
	ctx := context.Background()
	ss, err := sessions.Dump(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := history.Dump(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sessions": ss, "history": hs})
	return string(b)
}

// writeSession appends a realistic session: start, system prompt, turns
// with tool calls and results, a title, sometimes an interruption.
func writeSession(ctx context.Context, s events.Store, rng *rand.Rand, sid string, turns int) error {
	stream := events.SessionStream(sid)
	meta := func(turn int) schema.Meta {
		return schema.Meta{SessionID: sid, TurnID: fmt.Sprintf("%s-t%d", sid, turn)}
	}
	start := []schema.Envelope{
		schema.MustEnvelope(meta(0), schema.SessionStarted{Source: []string{"cli", "telegram", "slack"}[rng.IntN(3)], Model: "gpt-4o-mini", Provider: "openai", Reason: schema.StartNew}),
		schema.MustEnvelope(meta(0), schema.SystemPromptBuilt{Content: "You are Hermes. Session " + sid}),
	}
	if _, err := s.Append(ctx, stream, events.NoStream, start...); err != nil {
		return err
	}
	for turn := 1; turn <= turns; turn++ {
		batch := []schema.Envelope{schema.MustEnvelope(meta(turn), schema.UserMessageAdded{Content: fmt.Sprintf("question %d of %s: what is in file%d.go?", turn, sid, rng.IntN(100))})}
		for c := range rng.IntN(3) {
			id := fmt.Sprintf("call_%d_%d", turn, c)
			batch = append(batch,
				schema.MustEnvelope(meta(turn), schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{{ID: id, Type: "function",
					Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"main.go"}`}}}, FinishReason: "tool_calls", Model: "gpt-4o-mini",
					Usage: schema.Usage{PromptTokens: int64(100 + rng.IntN(1000)), CompletionTokens: 20}, CostUSD: 0.0001}),
				schema.MustEnvelope(meta(turn), schema.ToolCallStarted{CallID: id, Name: "read_file", Arguments: `{"path":"main.go"}`}),
				schema.MustEnvelope(meta(turn), schema.ToolResultAdded{CallID: id, Name: "read_file", Content: "package main\n\nfunc main() {}\n", DurationMS: 3}))
		}
		if rng.IntN(10) == 0 {
			batch = append(batch, schema.MustEnvelope(meta(turn), schema.TurnInterrupted{Reason: "user sent /stop"}))
		} else {
			batch = append(batch,
				schema.MustEnvelope(meta(turn), schema.AssistantMessageAdded{Content: "It holds an empty main.", FinishReason: "stop", Model: "gpt-4o-mini",
					Usage: schema.Usage{PromptTokens: 900, CompletionTokens: 12, CacheReadTokens: 512}, CostUSD: 0.0002}),
				schema.MustEnvelope(meta(turn), schema.TurnCompleted{Iterations: 1}))
		}
		if turn == 1 {
			batch = append(batch, schema.MustEnvelope(meta(turn), schema.SessionTitled{Title: "Files of " + sid}))
		}
		if _, err := s.Append(ctx, stream, events.StreamExists, batch...); err != nil {
			return err
		}
	}
	return nil
}

// TestLiveEqualsRebuilt runs the projections live while writers append
// concurrently, then compares them with a rebuild from scratch and with a
// fresh database built from the log, byte for byte.
func TestLiveEqualsRebuilt(t *testing.T) { eachDB(t, testLiveEqualsRebuilt) }

func testLiveEqualsRebuilt(t *testing.T, b backend) {
	dir := t.TempDir()
	e := openEnvOn(t, b, dir, b.fresh(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- e.run.Run(rctx) }()

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 6 {
				if err := writeSession(ctx, e.store, rng, fmt.Sprintf("w%d-s%d", w, i), 5+rng.IntN(10)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// A child session carrying history, and an erased session.
	child := schema.MustEnvelope(schema.Meta{SessionID: "child"}, schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: "w0-s0",
		History: []schema.Message{{Role: "user", Content: "[summary]"}, {Role: "assistant", Content: "ok"}}})
	if _, err := e.store.Append(ctx, events.SessionStream("child"), events.NoStream, child); err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteStream(ctx, events.SessionStream("w1-s1"), events.Any); err != nil {
		t.Fatal(err)
	}
	head, _ := e.store.Head(ctx)
	if err := e.run.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("runner: %v", err)
	}
	live := dump(t, e.db.Reader())

	// Sanity of the live result itself.
	list, _ := sessions.List(ctx, e.db.Reader(), 0)
	if len(list) != 4*6-1+1 {
		t.Fatalf("%d sessions listed, want 24 (one erased, one child)", len(list))
	}
	for _, s := range list {
		if s.ID == "w1-s1" {
			t.Fatal("erased session still listed")
		}
	}
	if msgs, _ := history.Messages(ctx, e.db.Reader(), "w1-s1"); len(msgs) != 0 {
		t.Fatal("erased session still has history")
	}

	if err := e.run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if rebuilt := dump(t, e.db.Reader()); rebuilt != live {
		t.Fatalf("rebuilt projections differ from live ones:\nlive    %.400s\nrebuilt %.400s", live, rebuilt)
	}
	// A brand-new projections database fed from the same log.
	fresh := b.open(t, b.fresh(t))
	r2 := projections.NewRunner(e.store, zerolog.Nop(), fresh.Projection(sessions.NewModel()), fresh.Projection(history.NewModel()))
	if _, err := r2.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, fresh.Reader()); got != live {
		t.Fatal("a fresh database built from the log differs from the live projections")
	}
}

// TestHistoryAgreesWithFold checks the projection against the pure fold the
// session actor recovers with.
func TestHistoryAgreesWithFold(t *testing.T) { eachDB(t, testHistoryAgreesWithFold) }

func testHistoryAgreesWithFold(t *testing.T, b backend) {
	e := openEnvOn(t, b, t.TempDir(), b.fresh(t))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		if err := writeSession(ctx, e.store, rng, fmt.Sprintf("s%d", i), 8); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i)
		rs, err := e.store.ReadStream(ctx, events.SessionStream(sid), events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ps []schema.Payload
		for _, r := range rs {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		want, _ := json.Marshal(history.Fold(ps).Full())
		msgs, err := history.Messages(ctx, e.db.Reader(), sid)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(msgs)
		if string(got) != string(want) {
			t.Fatalf("%s: projection %s\nfold %s", sid, got, want)
		}
		if msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Fatalf("%s: history starts %s, %s", sid, msgs[0].Role, msgs[1].Role)
		}
	}
}

// failing wraps a model and fails its n-th Apply, standing in for a crash
// in the middle of a batch.
type failing struct {
	projections.Model
	n     *int
	after int
}

func (f failing) Apply(tx *projections.Tx, ev projections.Event) error {
	*f.n++
	if *f.n == f.after {
		return errors.New("injected failure")
	}
	return f.Model.Apply(tx, ev)
}

// TestFailedBatchAppliesNothing: a batch that fails half-way leaves neither
// state nor checkpoint behind, so the retry applies each event once.
func TestFailedBatchAppliesNothing(t *testing.T) { eachDB(t, testFailedBatchAppliesNothing) }

func testFailedBatchAppliesNothing(t *testing.T, b backend) {
	dir := t.TempDir()
	n := 0
	e := openEnvOn(t, b, dir, b.fresh(t), failing{sessions.NewModel(), &n, 150}, failing{history.NewModel(), new(int), 0})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 6 {
		if err := writeSession(ctx, e.store, rng, fmt.Sprintf("s%d", i), 6); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.run.CatchUp(ctx); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("want the injected failure, got %v", err)
	}
	st, _ := e.run.Status(ctx)
	if st[0].Checkpoint != 0 {
		t.Fatalf("failed batch advanced the checkpoint to %d", st[0].Checkpoint)
	}
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	got := dump(t, e.db.Reader())
	if err := e.run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if want := dump(t, e.db.Reader()); got != want {
		t.Fatal("retry after a failed batch double-applied or lost events")
	}
}

// TestTwoRunnersShareOneDatabase: two runners (as two processes would) feed
// the same projections database; each event still counts once.
func TestTwoRunnersShareOneDatabase(t *testing.T) { eachDB(t, testTwoRunnersShareOneDatabase) }

func testTwoRunnersShareOneDatabase(t *testing.T, b backend) {
	dir := t.TempDir()
	where := b.fresh(t)
	a := openEnvOn(t, b, dir, where)
	c := openEnvOn(t, b, dir, where)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	rctx, stop := context.WithCancel(ctx)
	for _, e := range []*env{a, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.run.Run(rctx)
		}()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 8 {
		if err := writeSession(ctx, a.store, rng, fmt.Sprintf("s%d", i), 6); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := a.store.Head(ctx)
	a.run.WaitFor(ctx, head)
	c.run.WaitFor(ctx, head)
	stop()
	wg.Wait()
	shared := dump(t, a.db.Reader())
	if err := a.run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if want := dump(t, a.db.Reader()); shared != want {
		t.Fatal("two runners on one database double-applied or lost events")
	}
}

func TestUnknownEventStopsTheRunner(t *testing.T) {
	e := openEnv(t, t.TempDir())
	ctx := context.Background()
	good := schema.MustEnvelope(schema.Meta{SessionID: "x"}, schema.UserMessageAdded{Content: "hello"})
	bad := schema.Envelope{ID: "5f0c6c52-38a1-4a57-9a3b-0f3c1d2e4b5a", Type: "FromTheFuture", Version: 1, SessionID: "x", Time: time.Now(), Payload: []byte(`{}`)}
	e.store.Append(ctx, "session-x", events.Any, good)
	e.store.Append(ctx, "session-x", events.Any, bad)
	_, err := e.run.CatchUp(ctx)
	if err == nil {
		t.Fatal("an unknown event type was skipped")
	}
	if !strings.Contains(err.Error(), "session-x@1 (position 2)") || !strings.Contains(err.Error(), "FromTheFuture") {
		t.Fatalf("error does not name the event: %v", err)
	}
	malformed := schema.Envelope{ID: "6f0c6c52-38a1-4a57-9a3b-0f3c1d2e4b5a", Type: "TurnCompleted", Version: 1, SessionID: "y", Time: time.Now(), Payload: []byte(`{"iterations":"three"}`)}
	e.store.Append(ctx, "session-y", events.Any, malformed)
	if _, err := projections.Decode(mustRead(t, e.store, "session-y")); err == nil || !strings.Contains(err.Error(), "session-y@0") {
		t.Fatalf("malformed payload: %v", err)
	}
}

func mustRead(t *testing.T, s events.Store, stream string) events.Recorded {
	rs, err := s.ReadStream(context.Background(), stream, events.Forward, 0, 1)
	if err != nil || len(rs) != 1 {
		t.Fatal(err)
	}
	return rs[0]
}

// TestRebuildBesideLiveRunner rebuilds every projection while a runner of
// another "process" (its own connections to the same projections.db)
// follows the log live and a writer appends. Before spans were checked
// against the stored checkpoint, the live runner applied a span read
// before the reset on top of the emptied state, and the rebuild then went
// on from that span's end: sessions vanished while status said 0 behind.
// After each round every projection must equal a fresh build from the log.
func TestRebuildBesideLiveRunner(t *testing.T) { eachDB(t, testRebuildBesideLiveRunner) }

func testRebuildBesideLiveRunner(t *testing.T, b backend) {
	dir := t.TempDir()
	where := b.fresh(t)
	a := openEnvOn(t, b, dir, where)
	live := openEnvOn(t, b, dir, where)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(11, 12))
	n := 0
	for round := range 8 {
		rctx, stop := context.WithCancel(ctx)
		runErr := make(chan error, 1)
		go func() { runErr <- live.run.Run(rctx) }()
		writing := make(chan error, 1)
		go func() {
			wr := rand.New(rand.NewPCG(uint64(round), 3))
			for i := range 6 {
				if err := writeSession(ctx, a.store, wr, fmt.Sprintf("r%d-s%d", round, i), 3+wr.IntN(6)); err != nil {
					writing <- err
					return
				}
			}
			writing <- nil
		}()
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		if err := a.run.Rebuild(ctx, ""); err != nil {
			t.Fatalf("round %d: rebuild: %v", round, err)
		}
		if err := <-writing; err != nil {
			t.Fatal(err)
		}
		n += 6
		head, _ := a.store.Head(ctx)
		if err := live.run.WaitFor(ctx, head); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		stop()
		if err := <-runErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: live runner: %v", round, err)
		}
		got := dump(t, a.db.Reader())
		fresh := b.open(t, b.fresh(t))
		if _, err := projections.NewRunner(a.store, zerolog.Nop(), fresh.Projection(sessions.NewModel()), fresh.Projection(history.NewModel())).CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		want := dump(t, fresh.Reader())
		fresh.Close()
		if got != want {
			list, _ := sessions.List(ctx, a.db.Reader(), 0)
			st, _ := a.run.Status(ctx)
			t.Fatalf("round %d: projections after a rebuild beside a live runner differ from a fresh build: %d of %d sessions listed, status %+v", round, len(list), n, st)
		}
	}
}

// TestCancelIsNoFailure stops a live runner at random moments while events
// arrive: it returns the context's error and logs no error (it logged
// "projection failed" when the cancellation hit a batch being applied).
func TestCancelIsNoFailure(t *testing.T) { eachDB(t, testCancelIsNoFailure) }

func testCancelIsNoFailure(t *testing.T, b backend) {
	dir := t.TempDir()
	e := openEnvOn(t, b, dir, b.fresh(t))
	var logs strings.Builder
	var mu sync.Mutex
	run := projections.NewRunner(e.store, zerolog.New(lockedWriter{&mu, &logs}).Level(zerolog.WarnLevel), e.db.Projection(sessions.NewModel()), e.db.Projection(history.NewModel()))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	go func() {
		rng := rand.New(rand.NewPCG(9, 9))
		for i := 0; wctx.Err() == nil; i++ {
			writeSession(wctx, e.store, rng, fmt.Sprintf("c%d", i), 2)
		}
	}()
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 200 {
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- run.Run(rctx) }()
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d ended with %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() > 0 {
		t.Fatalf("cancelled runs logged:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func listIDs(t *testing.T, db *projections.DB) []string {
	t.Helper()
	list, err := sessions.List(context.Background(), db.Reader(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	return ids
}

// writeHome writes sessions with the given ids into a new events.db at
// path and closes it.
func writeHome(t *testing.T, path string, ids ...string) {
	t.Helper()
	s, err := embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, id := range ids {
		if err := writeSession(context.Background(), s, rng, id, 3); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
}

// TestReplacedLogIsNoticed replaces events.db under existing projections,
// by another home's log and by an empty one: the projections show the new
// log, with a warning, instead of counting its positions as the old one's.
func TestReplacedLogIsNoticed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	writeHome(t, path, "a1", "a2", "a3", "a4")
	other := filepath.Join(t.TempDir(), "events.db")
	writeHome(t, other, "b1")
	ctx := context.Background()

	var logs strings.Builder
	var mu sync.Mutex
	open := func() (*projections.Runner, *projections.DB, func()) {
		store, err := embedded.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
		if err != nil {
			t.Fatal(err)
		}
		run := projections.NewRunner(store, zerolog.New(lockedWriter{&mu, &logs}), db.Projection(sessions.NewModel()), db.Projection(history.NewModel()))
		return run, db, func() { db.Close(); store.Close() }
	}
	run, db, done := open()
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, db); len(ids) != 4 {
		t.Fatalf("listed %v", ids)
	}
	done()

	replace := func(src string) {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		if src != "" {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, b, 0o600)
		}
	}
	// Another home's log: it is longer than nothing, shorter than ours.
	replace(other)
	run, db, done = open()
	st, err := run.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Checkpoint != 0 || st[0].Behind != st[0].Head {
		t.Fatalf("status after the log was replaced: %+v", st)
	}
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, db); !reflect.DeepEqual(ids, []string{"b1"}) {
		t.Fatalf("after the log was replaced, listed %v", ids)
	}
	done()
	mu.Lock()
	if !strings.Contains(logs.String(), "the event log was replaced") || !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Fatalf("no warning: %s", logs.String())
	}
	mu.Unlock()

	// An emptied log (the file deleted; a new one is made).
	replace("")
	run, db, done = open()
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, db); len(ids) != 0 {
		t.Fatalf("after the log was emptied, listed %v", ids)
	}
	done()

	// A checkpoint from before identities (no log recorded) beyond the
	// head of the log: the head alone shows the log is not the one counted.
	replace(other)
	run, db, done = open()
	defer done()
	raw, err := sql.Open("sqlite", filepath.Join(dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE checkpoints SET position = 446, log = ''`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, db); !reflect.DeepEqual(ids, []string{"b1"}) {
		t.Fatalf("checkpoint 446 against a shorter log: listed %v", ids)
	}
	if st, _ := run.Status(ctx); st[0].Checkpoint != st[0].Head {
		t.Fatalf("status: %+v", st)
	}
}

// damage changes one byte of a row's payload with plain SQL, so that its
// checksum fails.
func damage(t *testing.T, path, stream string, rev int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), 'e', 'E') AS BLOB) WHERE stream = ? AND revision = ?`, stream, rev)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("damaged %d rows", n)
	}
}

// TestDamagedSessionIsQuarantined: one damaged record no longer stops the
// projections. Its session is left out of them, the damage is recorded for
// every process, and the other sessions go on being read and updated.
func TestDamagedSessionIsQuarantined(t *testing.T) { eachDB(t, testDamagedSessionIsQuarantined) }

func testDamagedSessionIsQuarantined(t *testing.T, b backend) {
	dir := t.TempDir()
	where := b.fresh(t)
	e := openEnvOn(t, b, dir, where)
	run := e.run.WithQuarantine(e.db)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 8))
	for _, id := range []string{"s0", "s1", "s2"} {
		if err := writeSession(ctx, e.store, rng, id, 3); err != nil {
			t.Fatal(err)
		}
	}
	// A projection that already went past the damage drops the session too.
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	damage(t, filepath.Join(dir, "events.db"), "session-s1", 2)
	if err := run.Rebuild(ctx, "history"); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, e.db); !reflect.DeepEqual(ids, []string{"s0", "s2"}) {
		t.Fatalf("listed %v", ids)
	}
	if msgs, _ := history.Messages(ctx, e.db.Reader(), "s1"); len(msgs) != 0 {
		t.Fatalf("the damaged session keeps %d messages", len(msgs))
	}
	ds, err := run.Damaged(ctx)
	if err != nil || len(ds) != 1 || ds[0].Stream != "session-s1" || ds[0].Revision != 2 || !strings.Contains(ds[0].Reason, "checksum") {
		t.Fatalf("damage recorded: %+v, %v", ds, err)
	}
	// Later events of the damaged session are skipped; others applied.
	s2 := schema.MustEnvelope(schema.Meta{SessionID: "s2"}, schema.UserMessageAdded{Content: "still here"})
	s1 := schema.MustEnvelope(schema.Meta{SessionID: "s1"}, schema.UserMessageAdded{Content: "after the damage"})
	e.store.Append(ctx, "session-s2", events.Any, s2)
	e.store.Append(ctx, "session-s1", events.Any, s1)
	// A record that passes its checksum but does not decode is damage too
	// (of a type the projections read: others are only checked as known).
	bad := schema.Envelope{ID: "7f0c6c52-38a1-4a57-9a3b-0f3c1d2e4b5a", Type: "UserMessageAdded", Version: 1, SessionID: "s0", Time: time.Now(), Payload: []byte(`{"content":5}`)}
	e.store.Append(ctx, "session-s0", events.Any, bad)
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, e.db); !reflect.DeepEqual(ids, []string{"s2"}) {
		t.Fatalf("listed %v", ids)
	}
	msgs, _ := history.Messages(ctx, e.db.Reader(), "s2")
	if len(msgs) == 0 || msgs[len(msgs)-1].Content != "still here" {
		t.Fatal("the healthy session was not updated")
	}
	// Another process (its own runner and connections) skips the same
	// streams, and a fresh build agrees.
	other := openEnvOn(t, b, dir, where)
	if _, err := other.run.WithQuarantine(other.db).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	got := dump(t, e.db.Reader())
	if err := run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if want := dump(t, e.db.Reader()); got != want {
		t.Fatal("projections with quarantined sessions differ from a rebuild")
	}
	if ds, _ := run.Damaged(ctx); len(ds) != 2 {
		t.Fatalf("after a rebuild the damage is found again: %+v", ds)
	}
}

// TestLiveRunnerSkipsDamage: a live runner that meets a damaged record (one
// whose checksum fails, committed by another process) quarantines its
// session and keeps applying the others.
func TestLiveRunnerSkipsDamage(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir)
	run := e.run.WithQuarantine(e.db)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(2, 2))
	if err := writeSession(ctx, e.store, rng, "s0", 2); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- run.Run(rctx) }()
	head, _ := e.store.Head(ctx)
	if err := run.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	// Another process writes an event of session s9 that is damaged by
	// the time anyone reads it: committed with a checksum that cannot hold.
	raw, err := sql.Open("sqlite", filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	ev := schema.MustEnvelope(schema.Meta{SessionID: "s9"}, schema.SessionStarted{Source: "cli"})
	pos := head + 1
	tx, _ := raw.Begin()
	tx.Exec(`INSERT INTO events (position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, record_crc)
		VALUES (?, 'session-s9', 0, ?, ?, 1, 's9', ?, '', '', ?, 0)`, pos, ev.ID, ev.Type, ev.Time.UnixNano(), []byte(ev.Payload))
	tx.Exec(`INSERT INTO streams (stream, last, deleted) VALUES ('session-s9', 0, 0)`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if err := writeSession(ctx, e.store, rng, "s1", 2); err != nil {
		t.Fatal(err)
	}
	// A catch-up of the same runner beside the live one (a command that
	// reads while a chat follows the log) agrees with it.
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	head, _ = e.store.Head(ctx)
	if err := run.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("runner: %v", err)
	}
	if ids := listIDs(t, e.db); !reflect.DeepEqual(ids, []string{"s0", "s1"}) {
		t.Fatalf("listed %v", ids)
	}
	if ds, _ := run.Damaged(ctx); len(ds) != 1 || ds[0].Stream != "session-s9" || ds[0].Position != uint64(pos) {
		t.Fatalf("damage: %+v", ds)
	}
}

// TestScratchCopiesTheProjections: the private copy a read-only home reads
// from starts from the home's projections (with their checkpoints and
// quarantine), not from nothing.
func TestScratchCopiesTheProjections(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir)
	ctx := context.Background()
	if err := writeSession(ctx, e.store, rand.New(rand.NewPCG(1, 1)), "s0", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	e.db.Quarantine(ctx, "some-log", projections.Damage{Stream: "session-x", Position: 7, Reason: "test"})
	want := dump(t, e.db.Reader())
	e.db.Close()
	cp, err := projections.OpenScratch(filepath.Join(dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if got := dump(t, cp.Reader()); got != want {
		t.Fatal("the copy differs from the projections")
	}
	if ds, err := cp.Damaged(ctx, "some-log"); err != nil || len(ds) != 1 {
		t.Fatalf("the copy's quarantine: %v, %v", ds, err)
	}
}

// counting is a projection kept outside projections.db (as the search index
// and the memory files are): it counts the sessions started, with its own
// checkpoint, and records no log identity itself.
type counting struct {
	cp       uint64
	sessions map[string]bool
}

func (c *counting) Name() string                               { return "counting" }
func (c *counting) Checkpoint(context.Context) (uint64, error) { return c.cp, nil }
func (c *counting) Reset(context.Context) error                { c.cp, c.sessions = 0, map[string]bool{}; return nil }
func (c *counting) Apply(_ context.Context, b []projections.Event) error {
	for _, ev := range b {
		if ev.Position > c.cp && ev.Type == "SessionStarted" {
			c.sessions[ev.SessionID] = true
		}
	}
	c.cp = b[len(b)-1].Position
	return nil
}

// TestLongerReplacementLog replaces events.db by a longer log: no
// checkpoint is beyond its head, so only the log's identity shows the
// change, for the projections in projections.db and, through the origins
// the runner records, for one kept elsewhere (without them it kept the
// replaced log's session).
func TestLongerReplacementLog(t *testing.T) { eachDB(t, testLongerReplacementLog) }

func testLongerReplacementLog(t *testing.T, b backend) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	writeHome(t, path, "a1")
	other := filepath.Join(t.TempDir(), "events.db")
	writeHome(t, other, "b1", "b2", "b3", "b4", "b5", "b6")
	ctx := context.Background()
	where := b.fresh(t)
	plain := &counting{sessions: map[string]bool{}}
	open := func() (*projections.Runner, *projections.DB, func()) {
		store, err := embedded.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		db := b.open(t, where)
		run := projections.NewRunner(store, zerolog.Nop(), db.Projection(sessions.NewModel()), plain).WithOrigins(db)
		return run, db, func() { db.Close(); store.Close() }
	}
	run, db, done := open()
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	done()
	log, _ := os.ReadFile(other)
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	os.WriteFile(path, log, 0o600)
	run, db, done = open()
	defer done()
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, db); len(ids) != 6 || ids[0] != "b1" {
		t.Fatalf("after a longer log replaced ours, listed %v", ids)
	}
	if len(plain.sessions) != 6 || plain.sessions["a1"] {
		t.Fatalf("the projection kept elsewhere holds %v", plain.sessions)
	}
}
