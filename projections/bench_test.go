package projections_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	pgstore "github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// sessionEvents is one realistic session of about 100 events: start, system
// prompt, then turns of user message, two tool calls with results and a
// final answer.
func sessionEvents(sid string) []schema.Envelope {
	meta := schema.Meta{SessionID: sid, TurnID: sid + "-t"}
	out := []schema.Envelope{
		schema.MustEnvelope(meta, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Provider: "openai", Reason: schema.StartNew}),
		schema.MustEnvelope(meta, schema.SystemPromptBuilt{Content: "You are Hermes, a helpful agent with tools. Be concise."}),
	}
	for turn := 0; len(out) < 98; turn++ {
		out = append(out, schema.MustEnvelope(meta, schema.UserMessageAdded{Content: fmt.Sprintf("Turn %d: please check why the build of package events fails on Go 1.26 and fix it", turn)}))
		for c := range 2 {
			id := fmt.Sprintf("call_%d_%d", turn, c)
			out = append(out,
				schema.MustEnvelope(meta, schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{{ID: id, Type: "function",
					Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"go build ./..."}`}}}, FinishReason: "tool_calls",
					Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 2100, CompletionTokens: 25, CacheReadTokens: 1800}, CostUSD: 0.0004}),
				schema.MustEnvelope(meta, schema.ToolCallStarted{CallID: id, Name: "terminal", Arguments: `{"command":"go build ./..."}`}),
				schema.MustEnvelope(meta, schema.ToolResultAdded{CallID: id, Name: "terminal", Content: "events/store.go:12:2: undefined: x\nexit status 1", DurationMS: 840}))
		}
		out = append(out,
			schema.MustEnvelope(meta, schema.AssistantMessageAdded{Content: "The build failed on an undefined name; I fixed the import and it builds now.",
				FinishReason: "stop", Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 2400, CompletionTokens: 40}, CostUSD: 0.0005}),
			schema.MustEnvelope(meta, schema.TurnCompleted{Iterations: 3}))
	}
	return out
}

// BenchmarkRebuild rebuilds the session list and history projections from a
// log of HERMES_BENCH_EVENTS events (default 1,000,000). The log is written
// once per run; each iteration drops and rebuilds both projections.
func BenchmarkRebuild(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_EVENTS")); err == nil && v > 0 {
		total = v
	}
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	fillSessions(b, store, total)
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(sessions.NewModel()), db.Projection(history.NewModel()))
	b.ResetTimer()
	for b.Loop() {
		if err := run.Rebuild(ctx, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkProjectionsIntoPostgres rebuilds the four table projections from a
// PostgreSQL event store of HERMES_BENCH_PG_EVENTS events (default
// 100,000) into a SQLite file and into PostgreSQL (schema
// hermes_projections of the store's database, as a cluster keeps them), in
// the same run: the SQLite figure is the baseline.
func BenchmarkProjectionsIntoPostgres(b *testing.B) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_PG_EVENTS")); err == nil && v > 0 {
		total = v
	}
	url := pgServer(b).Database(b)
	ctx := context.Background()
	store, err := pgstore.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	fillSessions(b, store, total)
	for _, db := range []backend{sqliteDB, postgresDB} {
		b.Run(db.name, func(b *testing.B) {
			var where string
			if db.name == "postgres" {
				where = url
			} else {
				where = db.fresh(b)
			}
			pdb := db.open(b, where)
			run := projections.NewRunner(store, zerolog.Nop(), projectionsOf(pdb, allModels())...)
			b.ResetTimer()
			for b.Loop() {
				if err := run.Rebuild(ctx, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// fillSessions appends sessions to store until it holds total events.
func fillSessions(b *testing.B, store events.Store, total int) {
	ctx := context.Background()
	n := 0
	for s := 0; n < total; s++ {
		evs := sessionEvents(fmt.Sprintf("%08d-0000-4000-8000-000000000000", s))
		if len(evs) > total-n {
			evs = evs[:total-n]
		}
		if _, err := store.Append(ctx, events.SessionStream(evs[0].SessionID), events.NoStream, evs...); err != nil {
			b.Fatal(err)
		}
		n += len(evs)
	}
}

// pgLeaser is the projections' leaser over the store's locks, as hermes
// wires it (cmd/hermes): a lock held elsewhere is a lease not taken.
type pgLeaser struct {
	locks *pgstore.Locks
	store *pgstore.Store
}

func (p pgLeaser) TryLease(ctx context.Context, name string) (projections.Lease, bool, error) {
	lk, err := p.locks.TryLock(ctx, name)
	var le *pgstore.LockedError
	if errors.As(err, &le) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return lk, true, nil
}

func (p pgLeaser) LeaseHolder(ctx context.Context, name string) (string, error) {
	hs, err := p.store.Holders(ctx, name)
	if err != nil {
		return "", err
	}
	for _, h := range hs {
		if h.Name == name && h.Live {
			return h.Owner, nil
		}
	}
	return "", nil
}

// BenchmarkLeaseTakeover measures how long the four table projections in
// PostgreSQL go unfed when the process feeding them dies: its lock
// connection ends (as with kill -9) and a standby runner, retrying the
// leases each second (hermes' setting), takes them over and applies a
// session appended at the kill.
func BenchmarkLeaseTakeover(b *testing.B) {
	url := pgServer(b).Database(b)
	ctx := context.Background()
	store, err := pgstore.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	fillSessions(b, store, 1000)
	models := []projections.Model{sessions.NewModel(), history.NewModel(), lineage.NewModel(), costs.NewModel()}
	runner := func(owner string) (*projections.Runner, *pgstore.Locks, context.CancelFunc, chan error) {
		db := postgresDB.open(b, url)
		var ps []projections.Projection
		for _, m := range models {
			ps = append(ps, db.Projection(m))
		}
		locks := store.Locks(owner)
		b.Cleanup(func() { locks.Close() })
		r := projections.NewRunner(store, zerolog.Nop(), ps...).WithQuarantine(db).WithLeases(pgLeaser{locks: locks, store: store}, time.Second)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx) }()
		return r, locks, cancel, done
	}
	fedBy := func(r *projections.Runner, owner string, head uint64) bool {
		sts, err := r.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range sts {
			if st.FedBy != owner || st.Checkpoint < head {
				return false
			}
		}
		return true
	}
	wait := func(what string, cond func() bool) {
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("no %s within 60 s", what)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		head, _ := store.Head(ctx)
		x, _, stopX, doneX := runner(fmt.Sprintf("x%d", i))
		wait("first feeder", func() bool { return fedBy(x, fmt.Sprintf("x%d", i), head) })
		y, _, stopY, doneY := runner(fmt.Sprintf("y%d", i))
		// y stands by: its first attempt failed, and the kill comes at a
		// random point of its retry second.
		time.Sleep(time.Second + rand.N(time.Second))
		// x dies: the server drops its locks with its connection.
		k := uint64(pgstore.LockKey(projections.LeaseName("sessions")))
		var pid int
		if err := store.Pool().QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid = $1 AND objid = $2 AND objsubid = 1`, uint32(k>>32), uint32(k)).Scan(&pid); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := store.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			b.Fatal(err)
		}
		stopX() // and it runs no more
		evs := sessionEvents(fmt.Sprintf("take-%d", i))
		if _, err := store.Append(ctx, events.SessionStream(evs[0].SessionID), events.NoStream, evs...); err != nil {
			b.Fatal(err)
		}
		head, _ = store.Head(ctx)
		wait("takeover", func() bool { return fedBy(y, fmt.Sprintf("y%d", i), head) })
		total += time.Since(start)
		b.StopTimer()
		<-doneX
		stopY()
		<-doneY
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/takeover")
}
