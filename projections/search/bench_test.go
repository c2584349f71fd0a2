package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	_ "modernc.org/sqlite"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

var (
	words = strings.Fields(`the a to of and in is it that for you this with on be are can what how do i my we should
		please check build test deploy server error fix function file config database query index search agent model
		token cost session memory skill terminal command output network request response timeout retry cache user
		message history branch commit merge release version docker container kubernetes cluster node pod service
		python golang rust javascript typescript module package import export struct interface method variable
		performance latency throughput benchmark profile allocation goroutine channel mutex deadlock race panic
		recipe travel weather meeting calendar email invoice budget report summary draft review plan schedule`)
	idents = []string{"subscriptionManager", "drain_queue", "parseConfig", "http_client", "retryBackoff", "user_id", "NewStore", "max_tokens"}
	paths  = []string{"internal/queue/manager.go", "cmd/server/main.go", "scripts/deploy_staging.sh", "docs/README.md", "src/app/index.ts"}
)

func sentence(rng *rand.Rand) string {
	n := 8 + rng.IntN(40)
	parts := make([]string, n)
	for i := range parts {
		switch r := rng.IntN(20); {
		case r == 0:
			parts[i] = idents[rng.IntN(len(idents))]
		case r == 1:
			parts[i] = paths[rng.IntN(len(paths))]
		default:
			parts[i] = words[rng.IntN(len(words))]
		}
	}
	return strings.Join(parts, " ")
}

func percentile(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
}

var benchSources = []string{"cli", "telegram", "slack", "discord"}

type benchMsg struct{ session, source, role, text string }

// corpus is total chat messages in sessions of 50, sources in turn.
func corpus(rng *rand.Rand, total int) []benchMsg {
	roles := []string{"user", "assistant", "tool"}
	msgs := make([]benchMsg, total)
	for i := range msgs {
		s := i / 50
		msgs[i] = benchMsg{fmt.Sprintf("s%06d", s), benchSources[s%len(benchSources)], roles[i%3], sentence(rng)}
	}
	return msgs
}

var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// indexBleve feeds msgs to a new index at path through Apply, in batches
// of 5,000, and returns it with the rate in messages/s.
func indexBleve(b *testing.B, path string, msgs []benchMsg) (*Index, float64) {
	idx, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	const batch = 5000
	pos := uint64(0)
	for lo := 0; lo < len(msgs); lo += batch {
		var evs []projections.Event
		for i := lo; i < min(lo+batch, len(msgs)); i++ {
			m := msgs[i]
			pos++
			ev := projections.Event{Recorded: events.Recorded{Envelope: schema.Envelope{SessionID: m.session, Time: benchBase.Add(time.Duration(i) * time.Minute)}, Revision: uint64(i % 50), Position: pos}}
			if i%50 == 0 {
				ev.Payload = schema.SessionStarted{Source: m.source, Model: "gpt-4o-mini", Reason: schema.StartNew}
				evs = append(evs, ev)
				pos++
				ev.Position = pos
			}
			switch m.role {
			case "user":
				ev.Payload = schema.UserMessageAdded{Content: m.text}
			case "assistant":
				ev.Payload = schema.AssistantMessageAdded{Content: m.text, Model: "gpt-4o-mini"}
			default:
				ev.Payload = schema.ToolResultAdded{CallID: "c", Name: "terminal", Content: m.text}
			}
			evs = append(evs, ev)
		}
		if err := idx.Apply(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	return idx, float64(len(msgs)) / time.Since(start).Seconds()
}

// BenchmarkSearchVsFTS5 indexes HERMES_BENCH_MESSAGES (default 100,000)
// chat messages into the Bleve projection and into SQLite FTS5 (the engine
// the Python Hermes uses) in the same run, then times word, phrase and
// filtered queries on both (HERMES_BENCH_QUERIES of each, default 200).
// Run with -benchtime 1x.
func BenchmarkSearchVsFTS5(b *testing.B) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_MESSAGES")); err == nil && v > 0 {
		total = v
	}
	rng := rand.New(rand.NewPCG(1, 2))
	msgs := corpus(rng, total)
	dir := b.TempDir()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		// Bleve, through the projection's own Apply.
		idx, bleveRate := indexBleve(b, filepath.Join(dir, fmt.Sprint("bleve", time.Now().UnixNano())), msgs)

		// FTS5 in a SQLite file, in transactions of the same size.
		db, err := sql.Open("sqlite", filepath.Join(dir, fmt.Sprint("fts", time.Now().UnixNano(), ".db")))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA journal_mode=WAL; CREATE VIRTUAL TABLE fts USING fts5(text, session UNINDEXED, source UNINDEXED, role UNINDEXED, tokenize='porter unicode61')`); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		const batch = 5000
		for lo := 0; lo < total; lo += batch {
			tx, _ := db.Begin()
			st, _ := tx.Prepare(`INSERT INTO fts (text, session, source, role) VALUES (?, ?, ?, ?)`)
			for _, m := range msgs[lo:min(lo+batch, total)] {
				if _, err := st.Exec(m.text, m.session, m.source, m.role); err != nil {
					b.Fatal(err)
				}
			}
			st.Close()
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		ftsRate := float64(total) / time.Since(start).Seconds()

		runs := 200
		if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_QUERIES")); err == nil && v > 0 {
			runs = v
		}
		kinds := []string{"word", "phrase", "filtered"}
		lat := map[string][]time.Duration{}
		for i := 0; i < runs; i++ {
			w1, w2 := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
			src := benchSources[rng.IntN(len(benchSources))]
			for _, k := range kinds {
				q := Query{Text: w1, Limit: 10}
				fq := `SELECT session, snippet(fts, 0, '[', ']', '…', 12), bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 10`
				arg := []any{w1}
				switch k {
				case "phrase":
					q.Text = `"` + w1 + " " + w2 + `"`
					arg = []any{`"` + w1 + " " + w2 + `"`}
				case "filtered":
					q.Source = src
					fq = `SELECT session, snippet(fts, 0, '[', ']', '…', 12), bm25(fts) FROM fts WHERE fts MATCH ? AND source = ? ORDER BY rank LIMIT 10`
					arg = []any{w1, src}
				}
				t0 := time.Now()
				if _, err := idx.Search(ctx, q); err != nil {
					b.Fatal(err)
				}
				lat["bleve_"+k] = append(lat["bleve_"+k], time.Since(t0))
				t0 = time.Now()
				rows, err := db.Query(fq, arg...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
				lat["fts5_"+k] = append(lat["fts5_"+k], time.Since(t0))
			}
		}
		b.ReportMetric(bleveRate, "bleve_msgs/s")
		b.ReportMetric(ftsRate, "fts5_msgs/s")
		for _, k := range kinds {
			b.ReportMetric(percentile(lat["bleve_"+k], 0.5), "bleve_"+k+"_p50_ms")
			b.ReportMetric(percentile(lat["bleve_"+k], 0.99), "bleve_"+k+"_p99_ms")
			b.ReportMetric(percentile(lat["fts5_"+k], 0.5), "fts5_"+k+"_p50_ms")
			b.ReportMetric(percentile(lat["fts5_"+k], 0.99), "fts5_"+k+"_p99_ms")
		}
		idx.Close()
		db.Close()
	}
}

// BenchmarkRebuildSearch drops the search index and rebuilds it through
// the projection runner from an embedded event store holding
// HERMES_BENCH_MESSAGES (default 100,000) messages in sessions of 50, with
// the tool-call and turn events a real log has between them: what
// `hermes search --rebuild` does.
func BenchmarkRebuildSearch(b *testing.B) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_MESSAGES")); err == nil && v > 0 {
		total = v
	}
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	all := 0
	for s := 0; s*50 < total; s++ {
		sid := fmt.Sprintf("%08d-0000-4000-8000-000000000000", s)
		m := schema.Meta{SessionID: sid, TurnID: "t"}
		evs := []schema.Envelope{schema.MustEnvelope(m, schema.SessionStarted{Source: "cli", Model: "gpt-4o-mini", Reason: schema.StartNew})}
		for i := 0; i < 50 && s*50+i < total; i++ {
			switch i % 3 {
			case 0:
				evs = append(evs, schema.MustEnvelope(m, schema.UserMessageAdded{Content: sentence(rng)}))
			case 1:
				evs = append(evs, schema.MustEnvelope(m, schema.AssistantMessageAdded{Content: sentence(rng), Model: "gpt-4o-mini",
					ToolCalls: []schema.ToolCall{{ID: "c", Type: "function", Function: schema.FunctionCall{Name: "terminal", Arguments: `{"command":"go test ./..."}`}}}}),
					schema.MustEnvelope(m, schema.ToolCallStarted{CallID: "c", Name: "terminal"}))
			default:
				evs = append(evs, schema.MustEnvelope(m, schema.ToolResultAdded{CallID: "c", Name: "terminal", Content: sentence(rng)}),
					schema.MustEnvelope(m, schema.TurnCompleted{Iterations: 2}))
			}
		}
		if _, err := store.Append(ctx, events.SessionStream(sid), events.NoStream, evs...); err != nil {
			b.Fatal(err)
		}
		all += len(evs)
	}
	idx, err := Open(filepath.Join(dir, "search.bleve"))
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	run := projections.NewRunner(store, zerolog.Nop(), idx)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if err := run.Rebuild(ctx, ""); err != nil {
			b.Fatal(err)
		}
	}
	secs := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(float64(total)/secs, "msgs/s")
	b.ReportMetric(float64(all)/secs, "events/s")
	res, err := idx.Search(ctx, Query{Text: "deploy"})
	if err != nil || res.Total == 0 {
		b.Fatalf("rebuilt index finds nothing: %v", err)
	}
}

// BenchmarkSearchVsHermesPython compares with the Python Hermes Agent
// itself: the same corpus is appended message by message through its
// hermes_state.SessionDB (SQLite + FTS5, as its CLI and gateway record
// conversations) and searched with its search_messages, then indexed here
// through the projection's Apply and searched with Search, which also
// groups, highlights and counts facets. Needs HERMES_AGENT_PYTHONPATH
// (hermes-agent's modules; .ci/run installs them). HERMES_BENCH_MESSAGES
// (default 100,000) and HERMES_BENCH_QUERIES (default 200) apply.
func BenchmarkSearchVsHermesPython(b *testing.B) {
	pyPath := os.Getenv("HERMES_AGENT_PYTHONPATH")
	if pyPath == "" {
		b.Skip("HERMES_AGENT_PYTHONPATH is not set (.ci/run installs hermes-agent and sets it)")
	}
	total, runs := 100_000, 200
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_MESSAGES")); err == nil && v > 0 {
		total = v
	}
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_QUERIES")); err == nil && v > 0 {
		runs = v
	}
	rng := rand.New(rand.NewPCG(1, 2))
	msgs := corpus(rng, total)
	type query struct {
		Kind   string `json:"kind"`
		Query  string `json:"query"`
		Source string `json:"source,omitempty"`
	}
	var queries []query
	for range runs {
		w1, w2 := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
		queries = append(queries, query{"word", w1, ""}, query{"phrase", `"` + w1 + " " + w2 + `"`, ""},
			query{"filtered", w1, benchSources[rng.IntN(len(benchSources))]})
	}
	ctx := context.Background()
	for b.Loop() {
		dir := b.TempDir()
		f, err := os.Create(filepath.Join(dir, "corpus.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		enc := json.NewEncoder(f)
		for i, m := range msgs {
			enc.Encode(map[string]any{"session": m.session, "source": m.source, "role": m.role, "text": m.text,
				"ts": float64(benchBase.Add(time.Duration(i) * time.Minute).Unix())})
		}
		f.Close()
		qb, _ := json.Marshal(queries)
		os.WriteFile(filepath.Join(dir, "queries.json"), qb, 0o644)
		cmd := exec.Command("python3", "testdata/hermes_search_bench.py", dir)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "HERMES_HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("the Python Hermes side: %v\n%s", err, out)
		}
		var py struct {
			Ingest  float64              `json:"ingest_msgs_per_s"`
			Latency map[string][]float64 `json:"latency_ms"`
			Hits    map[string][]int     `json:"hits"`
		}
		rb, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil || json.Unmarshal(rb, &py) != nil {
			b.Fatalf("result.json: %v %s", err, rb)
		}

		idx, rate := indexBleve(b, filepath.Join(dir, "search.bleve"), msgs)
		lat := map[string][]time.Duration{}
		found := map[string]int{}
		for _, q := range queries {
			t0 := time.Now()
			res, err := idx.Search(ctx, Query{Text: q.Query, Source: q.Source, Limit: 10})
			if err != nil {
				b.Fatal(err)
			}
			lat[q.Kind] = append(lat[q.Kind], time.Since(t0))
			if len(res.Hits) > 0 {
				found[q.Kind]++
			}
		}
		idx.Close()
		b.ReportMetric(rate, "go_msgs/s")
		b.ReportMetric(py.Ingest, "py_msgs/s")
		for _, k := range []string{"word", "phrase", "filtered"} {
			var pd []time.Duration
			pyFound := 0
			for i, ms := range py.Latency[k] {
				pd = append(pd, time.Duration(ms*float64(time.Millisecond)))
				if py.Hits[k][i] > 0 {
					pyFound++
				}
			}
			b.ReportMetric(percentile(lat[k], 0.5), "go_"+k+"_p50_ms")
			b.ReportMetric(percentile(lat[k], 0.99), "go_"+k+"_p99_ms")
			b.ReportMetric(percentile(pd, 0.5), "py_"+k+"_p50_ms")
			b.ReportMetric(percentile(pd, 0.99), "py_"+k+"_p99_ms")
			// how many queries found anything, on each side (a sanity check
			// that both searched the same corpus)
			b.ReportMetric(float64(found[k]), "go_"+k+"_found")
			b.ReportMetric(float64(pyFound), "py_"+k+"_found")
		}
	}
}
