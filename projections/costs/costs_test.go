package costs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/schema"
)

func TestCostsLiveEqualRebuiltAndByDimension(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(lineage.NewModel()), db.Projection(costs.NewModel()))
	ctx := context.Background()
	day1 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	write := func(sid string, start schema.SessionStarted, calls ...schema.AssistantMessageAdded) {
		evs := []schema.Envelope{schema.MustEnvelope(schema.Meta{SessionID: sid, Time: day1}, start)}
		for i, c := range calls {
			at := day1
			if i%2 == 1 {
				at = day2
			}
			evs = append(evs, schema.MustEnvelope(schema.Meta{SessionID: sid, Time: at}, c))
		}
		if _, err := store.Append(ctx, events.SessionStream(sid), events.NoStream, evs...); err != nil {
			t.Fatal(err)
		}
		if _, err := run.CatchUp(ctx); err != nil { // live, batch by batch
			t.Fatal(err)
		}
	}
	call := func(model, provider string, cost float64) schema.AssistantMessageAdded {
		return schema.AssistantMessageAdded{Model: model, Provider: provider, CostUSD: cost, Usage: schema.Usage{PromptTokens: 100, CompletionTokens: 10}}
	}
	write("root", schema.SessionStarted{Source: "cli", Reason: schema.StartNew}, call("gpt-4o", "openai", 1), call("gpt-4o", "openai", 2))
	write("child", schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: "root"}, call("claude-sonnet-4", "anthropic", 4))
	write("tg", schema.SessionStarted{Source: "telegram", Reason: schema.StartNew}, call("gpt-4o", "openai", 8), call("gpt-4o", "openai", 16))
	totals := func(dim, since string) string {
		rows, err := costs.Totals(ctx, db.Reader(), dim, since, noPrices)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, r := range rows {
			s += fmt.Sprintf("%s=%g/%d ", r.Key, r.Cost, r.Calls)
		}
		return s
	}
	live := totals("session", "") + totals("lineage", "") + totals("model", "") + totals("provider", "") + totals("source", "") + totals("day", "") + totals("session", "2026-11-21")
	want := "tg=24/2 child=4/1 root=3/2 " + "tg=24/2 root=7/3 " + "gpt-4o=27/4 claude-sonnet-4=4/1 " + "openai=27/4 anthropic=4/1 " + "telegram=24/2 cli=7/3 " +
		"2026-11-20=13/3 2026-11-21=18/2 " + "tg=16/1 root=2/1 "
	if live != want {
		t.Fatalf("totals\n got %s\nwant %s", live, want)
	}
	if err := run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	rebuilt := totals("session", "") + totals("lineage", "") + totals("model", "") + totals("provider", "") + totals("source", "") + totals("day", "") + totals("session", "2026-11-21")
	if rebuilt != live {
		t.Fatalf("rebuilt costs differ:\n%s\n%s", rebuilt, live)
	}
	tree, _ := lineage.Tree(ctx, db.Reader(), "child")
	b, _ := json.Marshal(tree)
	if len(tree) != 2 || tree[0].ID != "root" || tree[1].Depth != 1 || tree[1].Root != "root" {
		t.Fatalf("tree %s", b)
	}
	if d, _ := costs.Day(ctx, db.Reader(), "2026-11-21"); d != 18 {
		t.Fatalf("day total %g", d)
	}
	store.DeleteStream(ctx, events.SessionStream("tg"), events.Any)
	run.CatchUp(ctx)
	if got := totals("source", ""); got != "cli=7/3 " {
		t.Fatalf("erased session still counted: %s", got)
	}
	if _, err := costs.Totals(ctx, db.Reader(), "planet", "", noPrices); err == nil {
		t.Fatal("bad dimension accepted")
	}
}

// noPrices prices nothing (every call of the test above recorded a cost).
func noPrices(string, schema.Usage, float64) (float64, bool) { return 0, false }

// Calls that recorded no cost (their model had no price) are unpriced,
// not free: a row says how many and of which models. A price known when
// the totals are read prices them from their token usage, without a
// rebuild; calls that used no tokens cost nothing either way.
func TestUnpricedCallsStayUnknownUntilPriced(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(lineage.NewModel()), db.Projection(costs.NewModel()))
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	evs := []schema.Envelope{
		schema.MustEnvelope(schema.Meta{SessionID: "s", Time: at}, schema.SessionStarted{Source: "cli", Reason: schema.StartNew}),
		schema.MustEnvelope(schema.Meta{SessionID: "s", Time: at}, schema.AssistantMessageAdded{Model: "gpt-4o", Provider: "openai", CostUSD: 0.5,
			Usage: schema.Usage{PromptTokens: 100, CompletionTokens: 10}}),
		schema.MustEnvelope(schema.Meta{SessionID: "s", Time: at}, schema.AssistantMessageAdded{Model: "local-llama", Provider: "custom",
			Usage: schema.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}}),
		schema.MustEnvelope(schema.Meta{SessionID: "s", Time: at}, schema.AuxiliaryCallCompleted{Model: "local-llama", Provider: "custom",
			Usage: schema.Usage{PromptTokens: 1_000_000}}),
		schema.MustEnvelope(schema.Meta{SessionID: "s", Time: at}, schema.AssistantMessageAdded{Model: "local-llama", Provider: "custom"}),
	}
	if _, err := store.Append(ctx, events.SessionStream("s"), events.NoStream, evs...); err != nil {
		t.Fatal(err)
	}
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	show := func(dim string, price costs.Pricer) string {
		rows, err := costs.Totals(ctx, db.Reader(), dim, "", price)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, r := range rows {
			s += fmt.Sprintf("%s=%g/%d unpriced %d %v; ", r.Key, r.Cost, r.Calls, r.Unpriced, r.UnpricedModels)
		}
		return s
	}
	if got, want := show("session", noPrices), "s=0.5/4 unpriced 2 [local-llama]; "; got != want {
		t.Fatalf("no price:\n got %s\nwant %s", got, want)
	}
	if got, want := show("model", noPrices), "gpt-4o=0.5/1 unpriced 0 []; local-llama=0/3 unpriced 2 [local-llama]; "; got != want {
		t.Fatalf("by model:\n got %s\nwant %s", got, want)
	}
	// local-llama at $1 in and $2 out per million tokens: 2M in, 1M out.
	llama := func(model string, u schema.Usage, recorded float64) (float64, bool) {
		if model != "local-llama" {
			return 0, false
		}
		return (float64(u.PromptTokens)*1 + float64(u.CompletionTokens)*2) / 1e6, true
	}
	if got, want := show("session", llama), "s=4.5/4 unpriced 0 []; "; got != want {
		t.Fatalf("priced later:\n got %s\nwant %s", got, want)
	}
	if got, want := show("model", llama), "local-llama=4/3 unpriced 0 []; gpt-4o=0.5/1 unpriced 0 []; "; got != want {
		t.Fatalf("priced later, by model:\n got %s\nwant %s", got, want)
	}
}
