package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

func setup(t *testing.T) (*Index, *embedded.Store, *projections.Runner) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	idx, err := Open(filepath.Join(dir, "search.bleve"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx, store, projections.NewRunner(store, zerolog.Nop(), idx)
}

func write(t *testing.T, store *embedded.Store, sid, source string, at time.Time, ps ...schema.Payload) {
	envs := []schema.Envelope{schema.MustEnvelope(schema.Meta{SessionID: sid, Time: at}, schema.SessionStarted{Source: source, Model: "gpt-4o-mini", Reason: schema.StartNew})}
	for i, p := range ps {
		envs = append(envs, schema.MustEnvelope(schema.Meta{SessionID: sid, Time: at.Add(time.Duration(i) * time.Minute)}, p))
	}
	if _, err := store.Append(context.Background(), events.SessionStream(sid), events.Any, envs...); err != nil {
		t.Fatal(err)
	}
}

func sessions(r Results) string {
	var s []string
	for _, h := range r.Hits {
		s = append(s, h.Session)
	}
	return strings.Join(s, ",")
}

func TestSearch(t *testing.T) {
	idx, store, run := setup(t)
	ctx := context.Background()
	oct := time.Date(2026, 10, 5, 9, 0, 0, 0, time.UTC)
	nov := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	write(t, store, "deploy", "cli", oct,
		schema.UserMessageAdded{Content: "How do I deploy the staging server?"},
		schema.AssistantMessageAdded{Content: "Run the deployment script in scripts/deploy_staging.sh", Model: "gpt-4o-mini"})
	write(t, store, "bug", "telegram", nov,
		schema.UserMessageAdded{Content: "The subscriptionManager crashes when the queue is empty"},
		schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{{ID: "1", Type: "function", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"internal/queue/manager.go"}`}}}},
		schema.ToolResultAdded{CallID: "1", Name: "read_file", Content: "func (m *Manager) drainQueue() error { return nil }"},
		schema.AssistantMessageAdded{Content: "The crash comes from drainQueue on an empty queue."})
	write(t, store, "pasta", "telegram", nov, schema.UserMessageAdded{Content: "Recipe for a quick tomato pasta please"})
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    Query
		want string
	}{
		{Query{Text: "deploy"}, "deploy"},     // stemming: deployment, deploy
		{Query{Text: `"empty queue"`}, "bug"}, // phrase
		{Query{Text: `"the queue"`}, "bug"},   // stop words count in phrases
		{Query{Text: `"the tomato"`}, ""},     // ("a quick tomato"; not just "tomato")
		{Query{Text: `"quick tomato pasta"`}, "pasta"},
		{Query{Text: "subscript*"}, "bug"},  // prefix (subscriptionManager via text)
		{Query{Text: "tomatto~1"}, "pasta"}, // fuzzy
		{Query{Text: "crash -queue"}, ""},   // boolean: every crash message mentions the queue
		{Query{Text: "+crash +empty"}, "bug"},
		{Query{Text: "staging"}, "deploy"},                          // snake_case part of a path
		{Query{Text: "subscription manager"}, "bug"},                // camelCase parts
		{Query{Text: "drain"}, "bug"},                               // camelCase in a tool result
		{Query{Text: "pasta", Source: "cli"}, ""},                   // filter
		{Query{Text: "source:telegram role:user +recipe"}, "pasta"}, // field filters in the query
		{Query{Text: "queue", Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, "bug"},
		{Query{Text: "deploy", Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, ""},
		{Query{Text: "queue", Since: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}, "bug"}, // the same day counts
		{Query{Text: "queue", Since: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}, ""},
		{Query{Text: "deploy", Until: time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)}, "deploy"}, // the same day counts
		{Query{Text: "deploy", Until: time.Date(2026, 10, 4, 0, 0, 0, 0, time.UTC)}, ""},
		{Query{Text: "queue crash tomato", Since: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)}, ""},
		{Query{Text: "queue", Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}, "bug"},
		{Query{Text: "+month:2026-10 +deploy"}, "deploy"},
		{Query{Text: "+day:2026-11-20 +deploy"}, ""},
		// Words are all required, as in FTS5; OR gives alternatives.
		{Query{Text: "tomato nonexistentword"}, ""},
		{Query{Text: "tomato OR nonexistentword"}, "pasta"},
		{Query{Text: "quick pasta"}, "pasta"},
		{Query{Text: "pasta OR deploy"}, "deploy,pasta"},
		{Query{Text: "pasta OR staging server"}, "deploy,pasta"}, // AND binds tighter: pasta OR (staging AND server)
		{Query{Text: "pasta OR staging tomato"}, "pasta"},
		{Query{Text: "NOT queue crash"}, ""},
		// Field terms filter, they do not just rank.
		{Query{Text: "source:cli pasta"}, ""},
		{Query{Text: "source:telegram deploy"}, ""},
		{Query{Text: "source:telegram queue"}, "bug"},
		{Query{Text: "-source:telegram deploy"}, "deploy"},
		{Query{Text: `source:"telegram" +"quick tomato"`}, "pasta"},
		{Query{Text: "role:assistant recipe"}, ""},
		{Query{Text: "tool:read_file manager"}, "bug"},
		{Query{Text: `"quick tomato"~1`}, "pasta"},
	}
	for _, c := range cases {
		res, err := idx.Search(ctx, c.q)
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		if got := sessions(res); got != c.want {
			t.Errorf("%+v: got [%s], want [%s]", c.q, got, c.want)
		}
	}
	res, _ := idx.Search(ctx, Query{Text: "queue"})
	if len(res.Hits) != 1 || res.Hits[0].Matches < 2 || !strings.Contains(res.Hits[0].Snippet, "queue") {
		t.Fatalf("grouping or snippet: %+v", res.Hits)
	}
	// the user message, the read_file call's path, the tool result's
	// drainQueue and the answer
	wantFacets := "map[model:map[gpt-4o-mini:4] month:map[2026-11:4] role:map[assistant:2 tool:1 user:1] source:map[telegram:4]]"
	if got := fmt.Sprint(res.Facets); res.Total != 4 || got != wantFacets {
		t.Fatalf("total %d facets %s, want 4 and %s", res.Total, got, wantFacets)
	}
	before := fmt.Sprint(res.Hits[0].Session, res.Total)
	if err := run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	res, _ = idx.Search(ctx, Query{Text: "queue"})
	if after := fmt.Sprint(res.Hits[0].Session, res.Total); after != before {
		t.Fatalf("rebuild changed the hits: %s vs %s", after, before)
	}
	store.DeleteStream(ctx, events.SessionStream("bug"), events.Any)
	run.CatchUp(ctx)
	if res, _ := idx.Search(ctx, Query{Text: "queue"}); len(res.Hits) != 0 {
		t.Fatalf("deleted session still found: %+v", res.Hits)
	}
	for _, bad := range []string{"  ", "-pasta", `"unclosed`, "OR pasta", "pasta OR", "source:", "tomato~7"} {
		if _, err := idx.Search(ctx, Query{Text: bad}); err == nil {
			t.Errorf("query %q accepted", bad)
		}
	}
	if _, err := idx.Search(ctx, Query{Text: "queue", Since: nov, Until: oct}); err == nil || !strings.Contains(err.Error(), "before") {
		t.Fatalf("an empty date range: %v", err)
	}
}

// An index made with an older mapping is replaced on open and refilled
// from the log.
func TestOldMappingRebuilt(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	write(t, store, "s1", "cli", time.Now(), schema.UserMessageAdded{Content: "kubernetes rollout stuck"})
	path := filepath.Join(dir, "search.bleve")
	idx, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := projections.NewRunner(store, zerolog.Nop(), idx).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	idx.idx.SetInternal([]byte("mapping_version"), []byte("1"))
	idx.Close()

	idx, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if cp, _ := idx.Checkpoint(ctx); cp != 0 || idx.Replaced == nil {
		t.Fatalf("old index kept, checkpoint %d, replaced %v", cp, idx.Replaced)
	}
	if _, err := projections.NewRunner(store, zerolog.Nop(), idx).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := idx.Search(ctx, Query{Text: "rollout"})
	if err != nil || sessions(res) != "s1" {
		t.Fatalf("after refill: %+v %v", res.Hits, err)
	}
}

// The index admits one holder at a time: a second Open says it is busy
// (quickly, not hanging), and succeeds once the first lets go.
func TestBusyIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "search.bleve")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); !errors.Is(err, ErrBusy) {
		first.Close()
		t.Fatalf("second open while held: %v, want ErrBusy", err)
	}
	first.Close()
	second, err := Open(path)
	if err != nil {
		t.Fatalf("open after release: %v", err)
	}
	second.Close()
}

// One large Apply (split into concurrent segments) with a session erased
// in its middle: every other message is found once, none of the erased
// session's, and a second pass over the same events changes nothing.
func TestLargeBatchWithErasure(t *testing.T) {
	idx, err := Open(filepath.Join(t.TempDir(), "search.bleve"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ctx := context.Background()
	var evs []projections.Event
	pos := uint64(0)
	add := func(sid string, rev uint64, p schema.Payload) {
		pos++
		evs = append(evs, projections.Event{Recorded: events.Recorded{Envelope: schema.Envelope{SessionID: sid, Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, Revision: rev, Position: pos}, Payload: p})
	}
	const sessionsN, per = 60, 50 // 3,000 messages
	for s := range sessionsN {
		sid := fmt.Sprintf("s%02d", s)
		add(sid, 0, schema.SessionStarted{Source: "cli", Model: "m", Reason: schema.StartNew})
		for i := 1; i <= per; i++ {
			add(sid, uint64(i), schema.UserMessageAdded{Content: fmt.Sprintf("needle number %d in %s", i, sid)})
		}
		if s == 30 {
			pos++
			evs = append(evs, projections.Event{Recorded: events.Recorded{Envelope: schema.Envelope{SessionID: "s10", Type: events.StreamDeletedType}, Position: pos}})
		}
	}
	if err := idx.Apply(ctx, evs); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		res, err := idx.Search(ctx, Query{Text: "needle", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != (sessionsN-1)*per || len(res.Hits) != sessionsN-1 {
			t.Fatalf("%s: %d messages in %d sessions, want %d in %d", when, res.Total, len(res.Hits), (sessionsN-1)*per, sessionsN-1)
		}
		for _, h := range res.Hits {
			if h.Session == "s10" {
				t.Fatalf("%s: erased session found", when)
			}
			// sessions found past the first page carry their details too
			if h.Source != "cli" || h.Matches != per || !strings.Contains(h.Snippet, "needle") || !strings.Contains(h.Snippet, h.Session) {
				t.Fatalf("%s: hit %+v", when, h)
			}
		}
		if res.Facets["source"]["cli"] != (sessionsN-1)*per {
			t.Fatalf("%s: facets %v", when, res.Facets)
		}
	}
	check("first pass")
	if cp, _ := idx.Checkpoint(ctx); cp != pos {
		t.Fatalf("checkpoint %d, want %d", cp, pos)
	}
	// a crash before the checkpoint was written replays the batch
	idx.idx.SetInternal([]byte("checkpoint"), []byte("0"))
	if err := idx.Apply(ctx, evs); err != nil {
		t.Fatal(err)
	}
	check("replayed")
}

// A damaged index is replaced and refilled; a directory that is not an
// index is left alone.
func TestDamagedIndexReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "search.bleve")
	idx, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	idx.Close()
	if err := os.WriteFile(filepath.Join(path, "index_meta.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	idx, err = Open(path)
	if err != nil {
		t.Fatalf("damaged index not replaced: %v", err)
	}
	if idx.Replaced == nil || !strings.Contains(idx.Replaced.Error(), "unreadable") {
		t.Fatalf("replaced: %v", idx.Replaced)
	}
	idx.Close()
	if idx, err = Open(path); err != nil || idx.Replaced != nil {
		t.Fatalf("reopen: %v %v", err, idx.Replaced)
	}
	idx.Close()

	other := filepath.Join(dir, "notes")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "keep.txt"), []byte("mine"), 0o600)
	if _, err := Open(other); err == nil {
		t.Fatal("opened a directory that is not an index")
	}
	if b, _ := os.ReadFile(filepath.Join(other, "keep.txt")); string(b) != "mine" {
		t.Fatal("a directory that is not an index was touched")
	}
}

func TestMarkWordsInsideIdentifiers(t *testing.T) {
	on, off := HighlightOn, HighlightOff
	cases := []struct{ query, snippet, want string }{
		{"queue", "call drainQueue now", "call drain" + on + "Queue" + off + " now"},
		{"+payments -service", "the payments_service", "the " + on + "payments" + off + "_service"},
		{"role:user manager", "subscriptionManager manager", "subscription" + on + "Manager" + off + " " + on + "manager" + off},
		{"a", "a b", "a b"}, // too short to mark
	}
	for _, c := range cases {
		if got := markWords(c.snippet, queryWords(c.query)); got != c.want {
			t.Errorf("%q in %q: got %q, want %q", c.query, c.snippet, got, c.want)
		}
	}
}

// damageSegments points the sections index of every segment file of the
// index at path past the file's end, the way a torn or flipped write
// leaves one: scorch panics loading such a segment.
func damageSegments(t *testing.T, path string) {
	t.Helper()
	zaps, _ := filepath.Glob(filepath.Join(path, "store", "*.zap"))
	if len(zaps) == 0 {
		t.Fatal("no segment files to damage")
	}
	for _, z := range zaps {
		b, err := os.ReadFile(z)
		if err != nil {
			t.Fatal(err)
		}
		// footer: ... sections index offset (8), chunk mode (4), version (4), crc (4)
		off := len(b) - 12 - 8
		for i := range 8 {
			b[off+i] = 0x7f
		}
		if err := os.WriteFile(z, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDamagedSegmentRebuilt: a segment file damaged on disk made Open
// panic (and so `hermes search --rebuild`); it is reported as damage, the
// index replaced, and the rebuild finds everything again.
func TestDamagedSegmentRebuilt(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := range 5 {
		write(t, store, fmt.Sprintf("s%d", i), "cli", time.Now(), schema.UserMessageAdded{Content: fmt.Sprintf("deploy the staging server %d", i)})
	}
	path := filepath.Join(dir, "search.bleve")
	idx, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := projections.NewRunner(store, zerolog.Nop(), idx).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx.Close()
	damageSegments(t, path)

	idx, err = Open(path)
	if err != nil {
		t.Fatalf("open of a damaged index: %v", err)
	}
	defer idx.Close()
	var d *DamagedError
	if !errors.As(idx.Replaced, &d) {
		t.Fatalf("replaced: %v", idx.Replaced)
	}
	if err := projections.NewRunner(store, zerolog.Nop(), idx).Rebuild(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	res, err := idx.Search(context.Background(), Query{Text: "staging", Limit: 10})
	if err != nil || len(res.Hits) != 5 {
		t.Fatalf("after the rebuild: %v %+v", err, res)
	}
}

// The number of sessions with a match does not depend on how many are
// shown.
func TestSessionCountIgnoresLimit(t *testing.T) {
	idx, store, run := setup(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range 7 {
		write(t, store, fmt.Sprintf("s%d", i), "cli", at, schema.UserMessageAdded{Content: "the kettle boils"},
			schema.AssistantMessageAdded{Content: "tea time: the kettle is ready"})
	}
	write(t, store, "other", "cli", at, schema.UserMessageAdded{Content: "coffee please"})
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 3, 10} {
		res, err := idx.Search(ctx, Query{Text: "kettle", Limit: limit, CountSessions: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Sessions != 7 || res.Total != 14 || len(res.Hits) != min(limit, 7) {
			t.Fatalf("limit %d: %d sessions, %d messages, %d hits", limit, res.Sessions, res.Total, len(res.Hits))
		}
	}
}
