// Package storetest is the contract suite every events.Store must pass: the
// embedded and PostgreSQL stores run it in their tests, and the
// EventStoreDB adapter runs it against a real server when one is
// configured. Every case runs inside Run; Cases lists them, and a store
// declares in Features what optional capabilities it has, so that a case
// it cannot run is skipped with the reason rather than left out.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Factory returns a new, empty store for one case; the suite closes it
// (Close may be called twice: a case may close the store itself).
type Factory func(t *testing.T) events.Store

// Feature is an optional capability of a store that some cases need.
type Feature string

// The optional capabilities. A store declares those it has in Features.
const (
	// Reopen: Features.Reopen opens a store again on the log of another.
	Reopen Feature = "Reopen"
	// Shared: Features.Shared is set.
	Shared Feature = "Shared"
)

// Features is what a store declares to the suite beyond the contract every
// store keeps: the capabilities some cases need, and the cases it cannot
// pass. A case whose needs a store does not declare, or that the store
// names in Unsupported, is skipped by the suite with the reason, so that
// no case is left out silently.
type Features struct {
	// Reopen opens another store on the log s was made on, as the same
	// program after a restart or another process would; s may be open or
	// closed. The suite closes the store it returns. nil: the store has
	// no way to (one that keeps its log in memory, say).
	Reopen func(t *testing.T, s events.Store) events.Store
	// Shared: a store Reopen opens while s is still open shares the log
	// with s, as several processes on one store do — what either appends
	// the other reads and delivers to its subscribers, and expected
	// revisions hold across both.
	Shared bool
	// Unsupported names the cases (by Case.Name) the store cannot pass,
	// each with the reason, which the skip reports. A case named here with
	// no reason, or that is not a case of the suite, fails.
	Unsupported map[string]string
}

// has says whether f declares feature.
func (f Features) has(feature Feature) bool {
	switch feature {
	case Reopen:
		return f.Reopen != nil
	case Shared:
		return f.Reopen != nil && f.Shared
	}
	return false
}

// Case is one test of the contract.
type Case struct {
	// Name is the case's name, its subtest's under Run: run one case of a
	// store's suite with go test -run 'TestContract/Name$'.
	Name string
	// Needs are the features the case needs; without them it is skipped.
	Needs []Feature
	run   func(t *testing.T, s events.Store, f Features)
}

// Cases lists every case of the suite, in the order Run runs them.
func Cases() []Case {
	return []Case{
		{Name: "AppendAndReadBack", run: plain(testAppendAndReadBack)},
		{Name: "ExpectedRevision", run: plain(testExpectedRevision)},
		{Name: "ReadStreamDirections", run: plain(testReadStreamDirections)},
		{Name: "ReadAllPaging", run: plain(testReadAllPaging)},
		{Name: "BatchIsAtomic", run: plain(testBatchIsAtomic)},
		{Name: "ConcurrentConflicts", run: plain(testConcurrentConflicts)},
		{Name: "SubscribeCatchUpThenLive", run: plain(testSubscribe)},
		{Name: "SubscribeResumesFromCheckpoint", run: plain(testSubscribeResume)},
		{Name: "DeleteStreamTombstones", run: plain(testDelete)},
		{Name: "BadInputWritesNothing", run: plain(testBadInput)},
		{Name: "ReadStreamBesideAppends", run: plain(testReadStreamBeside)},
		{Name: "AppendsAfterClose", run: plain(testAppendsAfterClose)},
		{Name: "DeferSyncAppends", run: plain(testDeferSync)},
		{Name: "SurvivesReopen", Needs: []Feature{Reopen}, run: testSurvivesReopen},
		{Name: "SharedLog", Needs: []Feature{Reopen, Shared}, run: testSharedLog},
		{Name: "SharedLogWriters", Needs: []Feature{Reopen, Shared}, run: testSharedWriters},
	}
}

// plain adapts a case that needs nothing but the store.
func plain(fn func(*testing.T, events.Store)) func(*testing.T, events.Store, Features) {
	return func(t *testing.T, s events.Store, _ Features) { fn(t, s) }
}

// Run runs every case of the suite against stores made by newStore, each
// as a subtest named after it, with what the store declares in f.
func Run(t *testing.T, newStore Factory, f Features) {
	cases := Cases()
	known := map[string]bool{}
	for _, c := range cases {
		known[c.Name] = true
	}
	for name := range f.Unsupported {
		if !known[name] {
			t.Errorf("Features.Unsupported names %q, which is not a case of the suite", name)
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(t, newStore, f) })
	}
}

// Run runs the case on its own against a store made by newStore, or skips
// it with the reason when f does not declare what it needs or names it
// unsupported.
func (c Case) Run(t *testing.T, newStore Factory, f Features) {
	t.Helper()
	if why, ok := f.Unsupported[c.Name]; ok {
		if strings.TrimSpace(why) == "" {
			t.Fatalf("Features.Unsupported names %s without a reason", c.Name)
		}
		t.Skipf("unsupported by this store: %s", why)
	}
	for _, need := range c.Needs {
		if !f.has(need) {
			t.Skipf("needs the %s feature, which this store does not declare in storetest.Features", need)
		}
	}
	s := newStore(t)
	t.Cleanup(func() { s.Close() })
	c.run(t, s, f)
}

// Event makes a UserMessageAdded envelope for session sid with text.
func Event(sid, text string) schema.Envelope {
	return schema.MustEnvelope(schema.Meta{SessionID: sid, TurnID: "t1"}, schema.UserMessageAdded{Content: text})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testAppendAndReadBack(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	e1, e2 := Event("a", "one"), Event("a", "two")
	res, err := s.Append(ctx, "session-a", events.NoStream, e1, e2)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextRevision != 1 || res.Position == 0 {
		t.Fatalf("append result %+v", res)
	}
	got, err := s.ReadStream(ctx, "session-a", events.Forward, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d events, want 2", len(got))
	}
	for i, want := range []schema.Envelope{e1, e2} {
		g := got[i]
		if g.ID != want.ID || g.Type != want.Type || g.Version != want.Version || g.SessionID != want.SessionID ||
			g.TurnID != want.TurnID || !g.Time.Equal(want.Time) || string(g.Payload) != string(want.Payload) {
			t.Errorf("event %d read back as %+v, want %+v", i, g.Envelope, want)
		}
		if g.Revision != uint64(i) || g.Stream != "session-a" {
			t.Errorf("event %d at %s@%d", i, g.Stream, g.Revision)
		}
	}
	if got[1].Position != res.Position || got[0].Position >= got[1].Position {
		t.Errorf("positions %d,%d; append said %d", got[0].Position, got[1].Position, res.Position)
	}
	head, err := s.Head(ctx)
	if err != nil || head != res.Position {
		t.Errorf("head %d (%v), want %d", head, err, res.Position)
	}
	none, err := s.ReadStream(ctx, "session-none", events.Forward, 0, 10)
	if err != nil || len(none) != 0 {
		t.Errorf("missing stream read as %d events, %v", len(none), err)
	}
}

func wantWrong(t *testing.T, err error, actual uint64, exists bool) {
	t.Helper()
	var wev *events.WrongExpectedVersionError
	if !errors.As(err, &wev) {
		t.Fatalf("want WrongExpectedVersionError, got %v", err)
	}
	if wev.Exists != exists || (exists && wev.Actual != actual) {
		t.Fatalf("error carries actual %d exists %v, want %d %v", wev.Actual, wev.Exists, actual, exists)
	}
}

func testExpectedRevision(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	_, err := s.Append(ctx, "s", events.StreamExists, Event("s", "x"))
	wantWrong(t, err, 0, false)
	_, err = s.Append(ctx, "s", events.Exact(0), Event("s", "x"))
	wantWrong(t, err, 0, false)
	if _, err = s.Append(ctx, "s", events.NoStream, Event("s", "0")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "s", events.NoStream, Event("s", "x"))
	wantWrong(t, err, 0, true)
	if _, err = s.Append(ctx, "s", events.StreamExists, Event("s", "1")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "s", events.Exact(0), Event("s", "x"))
	wantWrong(t, err, 1, true)
	if _, err = s.Append(ctx, "s", events.Exact(1), Event("s", "2")); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Append(ctx, "s", events.Any, Event("s", "3")); err != nil || res.NextRevision != 3 {
		t.Fatalf("any: %+v %v", res, err)
	}
	got, _ := s.ReadStream(ctx, "s", events.Forward, 0, 0)
	if len(got) != 4 {
		t.Fatalf("failed appends wrote events: %d in stream, want 4", len(got))
	}
}

func testReadStreamDirections(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	for i := range 10 {
		if _, err := s.Append(ctx, "r", events.Any, Event("r", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	revs := func(rs []events.Recorded) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.Revision)
		}
		return out
	}
	fw, _ := s.ReadStream(ctx, "r", events.Forward, 3, 4)
	if fmt.Sprint(revs(fw)) != "[3 4 5 6]" {
		t.Errorf("forward from 3 limit 4: %v", revs(fw))
	}
	bw, _ := s.ReadStream(ctx, "r", events.Backward, 5, 3)
	if fmt.Sprint(revs(bw)) != "[5 4 3]" {
		t.Errorf("backward from 5 limit 3: %v", revs(bw))
	}
	last, _ := s.ReadStream(ctx, "r", events.Backward, events.End, 1)
	if fmt.Sprint(revs(last)) != "[9]" {
		t.Errorf("backward from end: %v", revs(last))
	}
	past, _ := s.ReadStream(ctx, "r", events.Forward, 10, 5)
	if len(past) != 0 {
		t.Errorf("read past the end: %v", revs(past))
	}
}

func testReadAllPaging(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	for i := range 25 {
		if _, err := s.Append(ctx, fmt.Sprintf("p%d", i%3), events.Any, Event("p", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var all []events.Recorded
	after := uint64(0)
	for {
		page, err := s.ReadAll(ctx, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 7 {
			t.Fatalf("page of %d over limit 7", len(page))
		}
		all = append(all, page...)
		after = page[len(page)-1].Position
	}
	if len(all) != 25 {
		t.Fatalf("paged %d events, want 25", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Position <= all[i-1].Position {
			t.Fatalf("global log out of order at %d", i)
		}
		if string(all[i].Payload) != fmt.Sprintf(`{"content":"%d"}`, i) {
			t.Fatalf("event %d is %s", i, all[i].Payload)
		}
	}
}

// testBatchIsAtomic appends batches of 10 while readers scan the global
// log: no reader may ever see part of a batch.
func testBatchIsAtomic(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	const batches, size = 40, 10
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var torn atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rs, err := s.ReadAll(ctx, 0, 100000)
			if err != nil {
				return
			}
			if len(rs)%size != 0 {
				torn.Add(1)
			}
		}
	}()
	for b := range batches {
		batch := make([]schema.Envelope, size)
		for i := range batch {
			batch[i] = Event("b", fmt.Sprintf("%d-%d", b, i))
		}
		if _, err := s.Append(ctx, fmt.Sprintf("b%d", b%4), events.Any, batch...); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if torn.Load() > 0 {
		t.Fatalf("readers saw a partial batch %d times", torn.Load())
	}
	// A batch whose condition fails leaves nothing behind.
	_, err := s.Append(ctx, "b0", events.Exact(0), Event("b", "x"), Event("b", "y"))
	wantWrong(t, err, size*batches/4-1, true)
	rs, _ := s.ReadAll(ctx, 0, 100000)
	if len(rs) != batches*size {
		t.Fatalf("%d events, want %d", len(rs), batches*size)
	}
}

// testConcurrentConflicts has many writers race for each revision of one
// stream with exact expected revisions.
func testConcurrentConflicts(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	const writers, revisions = 16, 30
	if _, err := s.Append(ctx, "c", events.NoStream, Event("c", "start")); err != nil {
		t.Fatal(err)
	}
	type win struct {
		writer int
		rev    uint64
	}
	var mu sync.Mutex
	wins := map[uint64][]int{}
	var losses atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			expect := uint64(0)
			for expect < revisions {
				_, err := s.Append(ctx, "c", events.Exact(expect), Event("c", fmt.Sprintf("w%d-r%d", w, expect+1)))
				var wev *events.WrongExpectedVersionError
				switch {
				case err == nil:
					mu.Lock()
					wins[expect+1] = append(wins[expect+1], w)
					mu.Unlock()
					expect++
				case errors.As(err, &wev):
					losses.Add(1)
					if !wev.Exists || wev.Actual <= expect {
						t.Errorf("loser told actual %d (exists %v) after expecting %d", wev.Actual, wev.Exists, expect)
						return
					}
					expect = wev.Actual
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rs, err := s.ReadStream(ctx, "c", events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != revisions+1 {
		t.Fatalf("stream has %d events, want %d", len(rs), revisions+1)
	}
	for rev := uint64(1); rev <= revisions; rev++ {
		if len(wins[rev]) != 1 {
			t.Fatalf("revision %d won by %v, want exactly one writer", rev, wins[rev])
		}
		want := fmt.Sprintf(`{"content":"w%d-r%d"}`, wins[rev][0], rev)
		if string(rs[rev].Payload) != want {
			t.Fatalf("revision %d holds %s, want the winner's %s", rev, rs[rev].Payload, want)
		}
	}
	if losses.Load() == 0 {
		t.Fatal("no writer ever lost: the test did not race")
	}
}

func testSubscribe(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	const writers, each = 8, 50
	// Some history before the subscription starts: catch-up.
	for i := range 20 {
		if _, err := s.Append(ctx, "pre", events.Any, Event("pre", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	total := 20 + writers*each
	got := make(chan events.Recorded, total+10)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.SubscribeAll(sctx, 0, func(r events.Recorded) error {
			got <- r
			return nil
		})
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.Append(ctx, fmt.Sprintf("w%d", w), events.Any, Event("w", fmt.Sprintf("%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	var last uint64
	for len(seen) < total {
		select {
		case r := <-got:
			if seen[r.ID] {
				t.Fatalf("event %s delivered twice", r.ID)
			}
			if r.Position <= last {
				t.Fatalf("position %d after %d: out of order", r.Position, last)
			}
			seen[r.ID] = true
			last = r.Position
		case <-time.After(20 * time.Second):
			t.Fatalf("subscription stalled after %d of %d events", len(seen), total)
		}
	}
	all, _ := s.ReadAll(ctx, 0, 100000)
	for _, r := range all {
		if !seen[r.ID] {
			t.Fatalf("event at position %d never delivered", r.Position)
		}
	}
	// Live: one more event arrives without any further prodding.
	if _, err := s.Append(ctx, "late", events.Any, Event("late", "x")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.Stream != "late" {
			t.Fatalf("unexpected live event from %s", r.Stream)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("live event not delivered")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("subscription ended with %v, want context.Canceled", err)
	}
}

func testSubscribeResume(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	for i := range 30 {
		if _, err := s.Append(ctx, "r", events.Any, Event("r", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	stopErr := errors.New("stop")
	var checkpoint uint64
	var first []string
	err := s.SubscribeAll(ctx, 0, func(r events.Recorded) error {
		first = append(first, string(r.Payload))
		checkpoint = r.Position
		if len(first) == 12 {
			return stopErr
		}
		return nil
	})
	if !errors.Is(err, stopErr) {
		t.Fatalf("handler error not returned: %v", err)
	}
	for i := 30; i < 40; i++ {
		if _, err := s.Append(ctx, "r", events.Any, Event("r", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var rest []string
	sctx, cancel := context.WithCancel(ctx)
	s.SubscribeAll(sctx, checkpoint, func(r events.Recorded) error {
		rest = append(rest, string(r.Payload))
		if len(rest) == 28 {
			cancel()
		}
		return nil
	})
	all := append(first, rest...)
	if len(all) != 40 {
		t.Fatalf("resumed delivery gave %d events, want 40", len(all))
	}
	for i, p := range all {
		if p != fmt.Sprintf(`{"content":"%d"}`, i) {
			t.Fatalf("event %d after resume is %s: gap or duplicate", i, p)
		}
	}
}

func testDelete(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	for i := range 3 {
		s.Append(ctx, events.SessionStream("gone"), events.Any, Event("gone", fmt.Sprint(i)))
		s.Append(ctx, events.SessionStream("kept"), events.Any, Event("kept", fmt.Sprint(i)))
	}
	if err := s.DeleteStream(ctx, events.SessionStream("gone"), events.Exact(0)); err == nil {
		t.Fatal("delete with a wrong expected revision succeeded")
	}
	if err := s.DeleteStream(ctx, events.SessionStream("gone"), events.Any); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadStream(ctx, events.SessionStream("gone"), events.Forward, 0, 0); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("read of deleted stream: %v", err)
	}
	if _, err := s.Append(ctx, events.SessionStream("gone"), events.Any, Event("gone", "again")); !errors.Is(err, events.ErrStreamDeleted) {
		t.Fatalf("append to deleted stream: %v", err)
	}
	all, _ := s.ReadAll(ctx, 0, 1000)
	tomb := 0
	for _, r := range all {
		if r.Stream == events.SessionStream("gone") {
			if !r.IsTombstone() {
				t.Fatalf("erased event still in the global log: %s", r.Payload)
			}
			if r.SessionID != "gone" {
				t.Errorf("tombstone names session %q", r.SessionID)
			}
			tomb++
		}
	}
	if tomb != 1 || !all[len(all)-1].IsTombstone() {
		t.Fatalf("want one tombstone at the end of the log, found %d", tomb)
	}
	kept, _ := s.ReadStream(ctx, events.SessionStream("kept"), events.Forward, 0, 0)
	if len(kept) != 3 {
		t.Fatalf("other stream lost events: %d", len(kept))
	}
	// Positions are never reused after an erasure.
	res, err := s.Append(ctx, "after", events.Any, Event("after", "x"))
	if err != nil || res.Position <= all[len(all)-1].Position {
		t.Fatalf("append after delete at %d (%v), tombstone at %d", res.Position, err, all[len(all)-1].Position)
	}
}

func testBadInput(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	good := Event("x", "ok")
	bad := Event("x", "bad")
	bad.Payload = []byte(`{"content": "unterminated`)
	if _, err := s.Append(ctx, "x", events.Any, good, bad); err == nil {
		t.Fatal("malformed JSON payload accepted")
	}
	noType := Event("x", "n")
	noType.Type = ""
	if _, err := s.Append(ctx, "x", events.Any, noType); err == nil {
		t.Fatal("event without type accepted")
	}
	if _, err := s.Append(ctx, "x", events.Any); err == nil {
		t.Fatal("empty append accepted")
	}
	rs, _ := s.ReadAll(ctx, 0, 100)
	if len(rs) != 0 {
		t.Fatalf("rejected appends wrote %d events", len(rs))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Append(cctx, "x", events.Any, good); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a cancelled context: %v", err)
	}
	if rs, _ := s.ReadAll(ctx, 0, 100); len(rs) != 0 {
		t.Fatal("a cancelled append was written")
	}
}

// testReadStreamBeside reads a stream while appends to it commit: every
// read succeeds and sees one snapshot, revisions 0 to some n with no gap
// and nothing past its end (a store once reported this as damage when it
// read a stream's rows and its end apart).
func testReadStreamBeside(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	const appends = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range appends {
			if _, err := s.Append(ctx, "session-x", events.Any, Event("x", fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no read ran beside the appends")
			}
			rs, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0)
			if err != nil || len(rs) != appends {
				t.Fatalf("after the appends the stream reads as %d events (%v), want %d", len(rs), err, appends)
			}
			return
		default:
		}
		rs, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0)
		if err != nil {
			t.Fatalf("read %d beside appends: %v", reads, err)
		}
		for i, r := range rs {
			if r.Revision != uint64(i) || string(r.Payload) != fmt.Sprintf(`{"content":"%d"}`, i) {
				t.Fatalf("read %d beside appends: event %d is revision %d, %s", reads, i, r.Revision, r.Payload)
			}
		}
	}
}
