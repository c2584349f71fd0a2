package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	pgstore "github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// allModels are the four table-backed read models.
func allModels() []projections.Model {
	return []projections.Model{sessions.NewModel(), history.NewModel(), lineage.NewModel(), costs.NewModel()}
}

// dumpAll is every table-backed read model as JSON, for comparing.
func dumpAll(t *testing.T, r *projections.Reader) string {
	t.Helper()
	ctx := context.Background()
	ss, err := sessions.Dump(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := history.Dump(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := lineage.Dump(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := costs.Totals(ctx, r, "session", "", unpriced)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sessions": ss, "history": hs, "lineage": ls, "costs": cs})
	return string(b)
}

// TestModelsRoundTrip applies the same events to every model on each
// database, reads them back through every read function, and finds the
// two databases agree byte for byte (ids sort by bytes on both).
func TestModelsRoundTrip(t *testing.T) {
	dumps := map[string]string{}
	eachDB(t, func(t *testing.T, b backend) {
		e := openEnvOn(t, b, t.TempDir(), b.fresh(t), allModels()...)
		ctx := context.Background()
		day1 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
		day2 := day1.Add(24 * time.Hour)
		at := func(sid string, when time.Time) schema.Meta { return schema.Meta{SessionID: sid, Time: when} }
		put := func(sid string, evs ...schema.Envelope) {
			t.Helper()
			if _, err := e.store.Append(ctx, events.SessionStream(sid), events.Any, evs...); err != nil {
				t.Fatal(err)
			}
		}
		// Ids that sort differently by bytes than in most locales.
		const root, child, grand, upper, accent = "aaaa1111-root", "aaaa2222-child", "bbbb-grandchild", "Zulu-session", "Ärger-session"
		answer := func(sid string, when time.Time, model, provider string, cost float64) schema.Envelope {
			return schema.MustEnvelope(at(sid, when), schema.AssistantMessageAdded{Content: "answer of " + sid, Model: model, Provider: provider,
				Usage: schema.Usage{PromptTokens: 100, CompletionTokens: 10, CacheReadTokens: 5, CacheWriteTokens: 1}, CostUSD: cost})
		}
		put(root,
			schema.MustEnvelope(at(root, day1), schema.SessionStarted{Source: "cli", Model: "gpt-4o", Provider: "openai", Reason: schema.StartNew}),
			schema.MustEnvelope(at(root, day1), schema.SystemPromptBuilt{Content: "You are Hermes."}),
			schema.MustEnvelope(at(root, day1), schema.UserMessageAdded{Content: "It's a 'quoted' question? with ünïcödé\nand a second line"}),
			answer(root, day1, "gpt-4o", "openai", 0.5))
		put(upper, schema.MustEnvelope(at(upper, day1), schema.SessionStarted{Source: "telegram", Reason: schema.StartNew}),
			answer(upper, day2, "gpt-4o", "openai", 8))
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		// A second batch on top of the first: the models read their rows
		// back, and costs add to what is stored.
		put(root, answer(root, day2, "gpt-4o", "openai", 0.25),
			schema.MustEnvelope(at(root, day2), schema.AuxiliaryCallCompleted{Purpose: "compression", Model: "gpt-4o-mini", Provider: "openai", CostUSD: 0.125}),
			schema.MustEnvelope(at(root, day2), schema.SessionTitled{Title: "Café talk"}))
		put(child, schema.MustEnvelope(at(child, day2), schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: root,
			History: []schema.Message{{Role: "user", Content: "[summary]"}, {Role: "assistant", Content: "ok"}}}),
			answer(child, day2, "claude-sonnet-4", "anthropic", 4))
		put(grand, schema.MustEnvelope(at(grand, day2.Add(time.Hour)), schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: child}))
		put(accent, schema.MustEnvelope(at(accent, day1), schema.SessionStarted{Source: "slack", Reason: schema.StartNew}))
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.db.Reader()

		list, err := sessions.List(ctx, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		if want := []string{grand, upper, root, child, accent}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("listed %v, want %v", ids, want)
		}
		if two, _ := sessions.List(ctx, r, 2); len(two) != 2 || two[1].ID != upper {
			t.Fatalf("limit 2: %+v", two)
		}
		all, err := sessions.Dump(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, s := range all {
			ids = append(ids, s.ID)
		}
		if want := []string{upper, root, child, grand, accent}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("dump in byte order: %v, want %v", ids, want)
		}
		s, ok, err := sessions.Get(ctx, r, root)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if s.Title != "Café talk" || s.Messages != 3 || s.Usage.PromptTokens != 200 || s.CostUSD != 0.75 || s.Source != "cli" || !s.Started.Equal(day1) || !s.LastActive.Equal(day2) {
			t.Fatalf("root session %+v", s)
		}
		if s, ok, err := sessions.Get(ctx, r, "aaaa2"); err != nil || !ok || s.ID != child || s.Messages != 3 || s.Parent != root {
			t.Fatalf("prefix aaaa2: %+v %v %v", s, ok, err)
		}
		if _, _, err := sessions.Get(ctx, r, "aaaa"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
			t.Fatalf("prefix aaaa: %v", err)
		}
		for _, id := range []string{"zzzz", "aaa", "\xff\xfe\xfd\xfc", "Är"} {
			if _, ok, err := sessions.Get(ctx, r, id); ok || err != nil {
				t.Fatalf("%q found: %v %v", id, ok, err)
			}
		}
		if s, ok, _ := sessions.Get(ctx, r, "Ärge"); !ok || s.ID != accent {
			t.Fatalf("prefix Ärge: %+v", s)
		}

		msgs, err := history.Messages(ctx, r, root)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Role)
		}
		if !reflect.DeepEqual(roles, []string{"system", "user", "assistant", "assistant"}) || !strings.Contains(msgs[1].Content, "'quoted' question?") {
			t.Fatalf("history of root: %+v", msgs)
		}
		if msgs, _ := history.Messages(ctx, r, child); len(msgs) != 3 || msgs[0].Content != "[summary]" {
			t.Fatalf("history of child: %+v", msgs)
		}

		tree, err := lineage.Tree(ctx, r, grand)
		if err != nil {
			t.Fatal(err)
		}
		if len(tree) != 3 || tree[0].ID != root || tree[1].ID != child || tree[2].ID != grand || tree[2].Depth != 2 || tree[2].Root != root {
			t.Fatalf("tree %+v", tree)
		}
		chain, err := lineage.Chain(ctx, r, root)
		if err != nil || len(chain) != 3 || chain[2].ID != grand {
			t.Fatalf("chain %+v %v", chain, err)
		}
		if _, err := lineage.Tree(ctx, r, "nobody"); err == nil {
			t.Fatal("tree of an unknown session")
		}

		totals := func(dim, since string) string {
			rows, err := costs.Totals(ctx, r, dim, since, unpriced)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, row := range rows {
				out += fmt.Sprintf("%s=%g/%d/%d ", row.Key, row.Cost, row.Calls, row.Usage.PromptTokens)
			}
			return out
		}
		got := totals("session", "") + "| " + totals("lineage", "") + "| " + totals("model", "") + "| " + totals("source", "") + "| " + totals("day", "2026-11-21")
		want := "Zulu-session=8/1/100 aaaa2222-child=4/1/100 aaaa1111-root=0.875/3/200 | " +
			"Zulu-session=8/1/100 aaaa1111-root=4.875/4/300 | " +
			"gpt-4o=8.75/3/300 claude-sonnet-4=4/1/100 gpt-4o-mini=0.125/1/0 | " +
			"telegram=8/1/100 cli=4.875/4/300 | " +
			"2026-11-21=12.375/4/300 "
		if got != want {
			t.Fatalf("totals\n got %s\nwant %s", got, want)
		}
		if d, err := costs.Day(ctx, r, "2026-11-20"); err != nil || d != 0.5 {
			t.Fatalf("day: %g %v", d, err)
		}
		if d, err := costs.Day(ctx, r, "2020-01-01"); err != nil || d != 0 {
			t.Fatalf("empty day: %g %v", d, err)
		}
		dumps[b.name] = dumpAll(t, r)

		// Erasing a session removes it from every model.
		if err := e.store.DeleteStream(ctx, events.SessionStream(upper), events.Any); err != nil {
			t.Fatal(err)
		}
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := sessions.Get(ctx, r, upper); ok {
			t.Fatal("erased session listed")
		}
		if got := totals("source", ""); got != "cli=4.875/4/300 " {
			t.Fatalf("erased session still counted: %s", got)
		}
		if msgs, _ := history.Messages(ctx, r, upper); len(msgs) != 0 {
			t.Fatal("erased session keeps its history")
		}
	})
	if len(dumps) == 2 && dumps["sqlite"] != dumps["postgres"] {
		t.Fatalf("the databases disagree:\nsqlite   %s\npostgres %s", dumps["sqlite"], dumps["postgres"])
	}
}

// TestSpanRefusedAfterAnotherHandleReset: a handle holding a span read
// before another handle (another process) reset the projection has it
// refused with ErrGap, and a span of another log too, on each database.
func TestSpanRefusedAfterAnotherHandleReset(t *testing.T) {
	eachDB(t, func(t *testing.T, b backend) {
		where := b.fresh(t)
		e := openEnvOn(t, b, t.TempDir(), where)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 9))
		for i := range 3 {
			if err := writeSession(ctx, e.store, rng, fmt.Sprintf("s%d", i), 2); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		head, _ := e.store.Head(ctx)
		logID, _ := e.store.LogID(ctx)
		other := b.open(t, where)
		if err := other.Projection(sessions.NewModel()).Reset(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := e.run.Find("sessions")
		if err != nil {
			t.Fatal(err)
		}
		late := schema.MustEnvelope(schema.Meta{SessionID: "s0"}, schema.UserMessageAdded{Content: "late"})
		span := projections.Span{Log: logID, After: head, Upto: head + 1,
			Events: []projections.Event{{Recorded: events.Recorded{Envelope: late, Stream: "session-s0", Revision: 99, Position: head + 1}, Payload: schema.UserMessageAdded{Content: "late"}}}}
		err = p.(projections.Contiguous).ApplySpan(ctx, span)
		var gap *projections.GapError
		if !errors.Is(err, projections.ErrGap) || !errors.As(err, &gap) || gap.Checkpoint != 0 || gap.After != head {
			t.Fatalf("span after a reset: %v", err)
		}
		if cp, _ := p.Checkpoint(ctx); cp != 0 {
			t.Fatalf("refused span moved the checkpoint to %d", cp)
		}
		if ids := listIDs(t, e.db); len(ids) != 0 {
			t.Fatalf("refused span wrote %v", ids)
		}
		// The runner reads again from the reset checkpoint.
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if ids := listIDs(t, other); len(ids) != 3 {
			t.Fatalf("after catching up again, the other handle lists %v", ids)
		}
		span.Log = "another-log"
		if err := p.(projections.Contiguous).ApplySpan(ctx, span); !errors.Is(err, projections.ErrGap) || !strings.Contains(err.Error(), "another-log") {
			t.Fatalf("span of another log: %v", err)
		}
		span.Log = logID
		if err := p.(projections.Contiguous).ApplySpan(ctx, span); err != nil {
			t.Fatalf("span continuing the checkpoint: %v", err)
		}
		if s, _, _ := sessions.Get(ctx, other.Reader(), "s0"); s.Messages == 0 || s.Title == "" {
			t.Fatalf("s0 after the span: %+v", s)
		}
	})
}

// bumped is a model at the next version of its tables.
type bumped struct{ projections.Model }

func (m bumped) Version() int { return m.Model.Version() + 1 }

// TestVersionChangeRebuilds: a model stored at another version is dropped
// when a handle of the new version opens it, and rebuilt from the log; the
// other models keep their state.
func TestVersionChangeRebuilds(t *testing.T) {
	eachDB(t, func(t *testing.T, b backend) {
		where := b.fresh(t)
		e := openEnvOn(t, b, t.TempDir(), where)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(2, 9))
		for i := range 3 {
			if err := writeSession(ctx, e.store, rng, fmt.Sprintf("v%d", i), 3); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		before := dump(t, e.db.Reader())
		head, _ := e.store.Head(ctx)
		db := b.open(t, where)
		run := projections.NewRunner(e.store, zerolog.Nop(), db.Projection(bumped{sessions.NewModel()}), db.Projection(history.NewModel()))
		st, err := run.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Checkpoint != 0 || st[1].Checkpoint != head {
			t.Fatalf("status after a version change: %+v", st)
		}
		if ids := listIDs(t, db); len(ids) != 0 {
			t.Fatalf("the old version's rows stayed: %v", ids)
		}
		if _, err := run.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, db.Reader()); got != before {
			t.Fatal("the rebuilt model differs")
		}
	})
}

// TestQuarantineAndOriginsRecords: what one handle records of damage and
// of origins, every handle reads, on each database.
func TestQuarantineAndOriginsRecords(t *testing.T) {
	eachDB(t, func(t *testing.T, b backend) {
		where := b.fresh(t)
		a, c := b.open(t, where), b.open(t, where)
		ctx := context.Background()
		found := time.Date(2026, 11, 23, 9, 30, 0, 123456789, time.UTC)
		if ds, err := a.Damaged(ctx, "log1"); err != nil || len(ds) != 0 {
			t.Fatalf("empty quarantine: %v %v", ds, err)
		}
		first := projections.Damage{Stream: "session-x", Revision: 4, Position: 9, Reason: "checksum mismatch", Found: found}
		for _, d := range []projections.Damage{first,
			{Stream: "session-y", Revision: 1, Position: 3, Reason: "undecodable", Found: found},
			{Stream: "session-x", Revision: 7, Position: 20, Reason: "later damage", Found: found}} {
			if err := a.Quarantine(ctx, "log1", d); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Quarantine(ctx, "log2", first); err != nil {
			t.Fatal(err)
		}
		ds, err := c.Damaged(ctx, "log1")
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].Stream != "session-y" || ds[1] != first {
			t.Fatalf("damage of log1: %+v", ds)
		}
		if err := c.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for _, log := range []string{"log1", "log2"} {
			if ds, _ := a.Damaged(ctx, log); len(ds) != 0 {
				t.Fatalf("after release, %s: %+v", log, ds)
			}
		}
		if o, err := a.ProjectionOrigin(ctx, "memory"); err != nil || o != "" {
			t.Fatalf("unknown origin: %q %v", o, err)
		}
		for _, log := range []string{"log1", "log2"} {
			if err := a.SetProjectionOrigin(ctx, "memory", log); err != nil {
				t.Fatal(err)
			}
		}
		if o, err := c.ProjectionOrigin(ctx, "memory"); err != nil || o != "log2" {
			t.Fatalf("origin: %q %v", o, err)
		}
	})
}

// TestPostgresCatchUpsShareOneCopy: two handles on one PostgreSQL database
// (two processes) catch the same projections up concurrently while a
// writer appends to a PostgreSQL event store: every event is applied
// exactly once (a span applied twice would double the cost totals and the
// message counts), and the shared copy equals one built alone.
func TestPostgresCatchUpsShareOneCopy(t *testing.T) {
	url := pgServer(t).Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := pgstore.Open(ctx, url, pgstore.WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const nSessions, turns = 12, 6
	writing := make(chan error, 1)
	go func() {
		defer close(writing)
		for i := range nSessions {
			sid := fmt.Sprintf("p%02d", i)
			stream := events.SessionStream(sid)
			meta := schema.Meta{SessionID: sid}
			if _, err := store.Append(ctx, stream, events.NoStream,
				schema.MustEnvelope(meta, schema.SessionStarted{Source: "cli", Reason: schema.StartNew}),
				schema.MustEnvelope(meta, schema.SystemPromptBuilt{Content: "You are Hermes."})); err != nil {
				writing <- err
				return
			}
			for turn := range turns {
				if _, err := store.Append(ctx, stream, events.StreamExists,
					schema.MustEnvelope(meta, schema.UserMessageAdded{Content: fmt.Sprintf("q%d", turn)}),
					schema.MustEnvelope(meta, schema.AssistantMessageAdded{Content: fmt.Sprintf("a%d", turn), Model: "m", Provider: "p",
						Usage: schema.Usage{PromptTokens: 10, CompletionTokens: 1}, CostUSD: 0.25})); err != nil {
					writing <- err
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	handles := []*projections.DB{postgresDB.open(t, url), postgresDB.open(t, url)}
	stop := make(chan struct{})
	for _, db := range handles {
		run := projections.NewRunner(store, zerolog.Nop(), projectionsOf(db, allModels())...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					_, err := run.CatchUp(ctx)
					errs <- err
					return
				default:
				}
				if _, err := run.CatchUp(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := handles[0].Reader()
	list, err := sessions.List(ctx, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != nSessions {
		t.Fatalf("%d sessions listed, want %d", len(list), nSessions)
	}
	for _, s := range list {
		if s.Messages != 2*turns || s.Usage.PromptTokens != 10*turns || s.CostUSD != 0.25*turns {
			t.Fatalf("session %s: %d messages, %d prompt tokens, $%g; want %d, %d, $%g", s.ID, s.Messages, s.Usage.PromptTokens, s.CostUSD, 2*turns, 10*turns, 0.25*turns)
		}
		msgs, err := history.Messages(ctx, r, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1+2*turns || msgs[len(msgs)-1].Content != fmt.Sprintf("a%d", turns-1) {
			t.Fatalf("history of %s: %d messages", s.ID, len(msgs))
		}
	}
	rows, err := costs.Totals(ctx, r, "model", "", unpriced)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Calls != nSessions*turns || rows[0].Cost != 0.25*nSessions*turns || rows[0].Usage.PromptTokens != 10*nSessions*turns {
		t.Fatalf("cost totals %+v, want %d calls, $%g", rows, nSessions*turns, 0.25*nSessions*turns)
	}
	alone := sqliteDB.open(t, filepath.Join(t.TempDir(), "projections.db"))
	if _, err := projections.NewRunner(store, zerolog.Nop(), projectionsOf(alone, allModels())...).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpAll(t, r), dumpAll(t, alone.Reader()); got != want {
		t.Fatalf("the shared projections differ from ones built alone:\nshared %.500s\nalone  %.500s", got, want)
	}
}

func projectionsOf(db *projections.DB, models []projections.Model) []projections.Projection {
	var out []projections.Projection
	for _, m := range models {
		out = append(out, db.Projection(m))
	}
	return out
}

// TestPostgresOpenAtOnce: several processes opening a fresh database at
// the same moment all succeed (creating the schema and tables at once can
// fail in PostgreSQL without a lock), and find the same tables; half of
// them with the event store's pool setting in the URL.
func TestPostgresOpenAtOnce(t *testing.T) {
	url := pgServer(t).Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 6
	start := make(chan struct{})
	errs := make(chan error, n)
	dbs := make([]*projections.DB, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			u := url
			if i%2 == 0 {
				u += "&pool_max_conns=4" // a store URL's pool setting is no server parameter
			}
			db, err := projections.OpenPostgres(ctx, u)
			if err != nil {
				errs <- err
				return
			}
			dbs[i] = db
			// The first write of each model creates its tables.
			for _, m := range allModels() {
				if _, err := db.Projection(m).Checkpoint(ctx); err != nil {
					errs <- fmt.Errorf("%s: %w", m.Name(), err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for _, db := range dbs {
		if db != nil {
			defer db.Close()
		}
	}
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if !dbs[0].Shared() {
		t.Fatal("a PostgreSQL projections database is not Shared")
	}
	if list, err := sessions.List(ctx, dbs[n-1].Reader(), 0); err != nil || len(list) != 0 {
		t.Fatalf("%v %v", list, err)
	}
}

// TestOpenPostgresErrors: a bad URL is refused without showing its
// password; an unreachable server is an error, not a hang.
func TestOpenPostgresErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := projections.OpenPostgres(ctx, "postgres://u:s3cretpw@127.0.0.1:1/x?sslmode=bogus")
	if err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("bad URL: %v", err)
	}
	_, err = projections.OpenPostgres(ctx, "postgres://u:s3cretpw@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")
	if err == nil || strings.Contains(err.Error(), "s3cretpw") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("unreachable server: %v", err)
	}
	if db := sqliteDB.open(t, filepath.Join(t.TempDir(), "p.db")); db.Shared() {
		t.Fatal("a SQLite projections database is Shared")
	}
}

// many is a model that writes a row per event through an Inserter, keyed
// by the event's revision modulo 600: more rows in a batch than one
// statement takes, and a second batch replacing every row.
type many struct{ pending [][]any }

func (*many) Name() string { return "many" }
func (*many) Version() int { return 1 }
func (*many) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS many (k TEXT PRIMARY KEY, n INTEGER NOT NULL, b BLOB NOT NULL) WITHOUT ROWID`)
}
func (*many) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS many`)
	return err
}
func (m *many) Forget() { m.pending = nil }
func (m *many) Apply(_ *projections.Tx, ev projections.Event) error {
	m.pending = append(m.pending, []any{fmt.Sprint(ev.Revision % 600), int64(ev.Revision), []byte(fmt.Sprintf("row '%d' ?", ev.Revision))})
	return nil
}
func (m *many) Flush(tx *projections.Tx) error {
	rows, err := tx.Inserter(projections.Upsert("many", "k", "k, n, b"))
	if err != nil {
		return err
	}
	for _, r := range m.pending {
		if err := rows.Add(r...); err != nil {
			return err
		}
	}
	m.pending = nil
	return rows.Close()
}

// TestInserterWritesEveryRow: 600 rows in one batch (statements of 256,
// 256, 64, 16 and 8 rows on PostgreSQL), then 600 replacing them, on each
// database.
func TestInserterWritesEveryRow(t *testing.T) {
	eachDB(t, func(t *testing.T, b backend) {
		e := openEnvOn(t, b, t.TempDir(), b.fresh(t), &many{})
		ctx := context.Background()
		for round := range 2 {
			var evs []schema.Envelope
			for range 600 {
				evs = append(evs, schema.MustEnvelope(schema.Meta{SessionID: "m"}, schema.UserMessageAdded{Content: "x"}))
			}
			if _, err := e.store.Append(ctx, "many-rows", events.Any, evs...); err != nil {
				t.Fatal(err)
			}
			if _, err := e.run.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			var n, sum int64
			if err := e.db.Reader().QueryRowContext(ctx, `SELECT count(*), CAST(sum(n) AS BIGINT) FROM many WHERE b <> ?`, []byte("")).Scan(&n, &sum); err != nil {
				t.Fatal(err)
			}
			lo := int64(600 * round)
			if want := (lo + lo + 599) * 600 / 2; n != 600 || sum != want {
				t.Fatalf("round %d: %d rows summing to %d, want 600 summing to %d", round, n, sum, want)
			}
		}
		var got []byte
		if err := e.db.Reader().QueryRowContext(ctx, `SELECT b FROM many WHERE k = ?`, "7").Scan(&got); err != nil || string(got) != "row '607' ?" {
			t.Fatalf("row 7: %q %v", got, err)
		}
	})
}

// unpriced prices nothing: the costs tests record the cost of each call.
func unpriced(string, schema.Usage, float64) (float64, bool) { return 0, false }
