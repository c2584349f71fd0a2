package projections_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	pgstore "github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
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
