package projections_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// statementLog records the statements sent on the projections'
// connections.
type statementLog struct {
	mu  sync.Mutex
	all []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.all = append(l.all, strings.Join(strings.Fields(d.SQL), " "))
	l.mu.Unlock()
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// matching counts the statements since the first n that start with prefix.
func (l *statementLog) matching(n int, prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := 0
	for _, s := range l.all[n:] {
		if strings.HasPrefix(s, prefix) {
			c++
		}
	}
	return c
}

func (l *statementLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// TestNewSessionsStatements: a batch of new sessions costs the session
// list, history and lineage a statement per table, not one per session:
// a session's first event has no row to read or history to delete before
// it, and the lineage rows go several a statement. A session whose
// history starts over later (a second SessionStarted) still has its old
// rows deleted.
func TestNewSessionsStatements(t *testing.T) {
	log := &statementLog{}
	ctx := context.Background()
	where := pgServer(t).Database(t)
	db, err := projections.OpenPostgres(ctx, where, projections.WithQueryTracer(log))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, t.TempDir(), db, sessions.NewModel(), history.NewModel(), lineage.NewModel())
	if _, err := e.run.CatchUp(ctx); err != nil { // tables made
		t.Fatal(err)
	}
	const n = 8
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := range n {
		sid := fmt.Sprintf("s%02d", i)
		at := schema.Meta{SessionID: sid, Time: day.Add(time.Duration(i) * time.Second)}
		if _, err := e.store.Append(ctx, events.SessionStream(sid), events.NoStream,
			schema.MustEnvelope(at, schema.SessionStarted{Source: "api", Model: "m", Reason: schema.StartNew}),
			schema.MustEnvelope(at, schema.SystemPromptBuilt{Content: "You are Hermes."}),
			schema.MustEnvelope(at, schema.UserMessageAdded{Content: "hello " + sid}),
			schema.MustEnvelope(at, schema.AssistantMessageAdded{Content: "hi " + sid})); err != nil {
			t.Fatal(err)
		}
	}
	from := log.count()
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prefix string
		max    int
	}{
		{"SELECT id, title", 0},     // a new session's row is not read
		{"DELETE FROM history", 0},  // nor its history deleted
		{"INSERT INTO lineage", 1},  // its lineage goes with the others'
		{"INSERT INTO sessions", 1}, // as its row does
		{"SELECT first_idx", 0},     // its next index is known
	} {
		if got := log.matching(from, c.prefix); got > c.max {
			t.Errorf("%d new sessions: %d statements %q…, want at most %d", n, got, c.prefix, c.max)
		}
	}
	r := e.db.Reader()
	list, err := sessions.List(ctx, r, 0)
	if err != nil || len(list) != n || list[0].Title != "hello s07" || list[0].Messages != 2 {
		t.Fatalf("session list: %+v %v", list, err)
	}
	nodes, err := lineage.Dump(ctx, r)
	if err != nil || len(nodes) != n || nodes[3].ID != "s03" || nodes[3].Root != "s03" {
		t.Fatalf("lineage: %+v %v", nodes, err)
	}
	msgs, err := history.Messages(ctx, r, "s05")
	if err != nil || len(msgs) != 3 || msgs[2].Content != "hi s05" {
		t.Fatalf("history of s05: %+v %v", msgs, err)
	}

	// Started over: the history is the new start's, the old rows gone,
	// and a message gathered before the start in the same batch too.
	at := schema.Meta{SessionID: "s01", Time: day.Add(time.Hour)}
	if _, err := e.store.Append(ctx, events.SessionStream("s01"), events.Any,
		schema.MustEnvelope(at, schema.UserMessageAdded{Content: "lost"}),
		schema.MustEnvelope(at, schema.SessionStarted{Source: "api", Reason: schema.StartNew, History: []schema.Message{{Role: "user", Content: "summary"}}}),
		schema.MustEnvelope(at, schema.AssistantMessageAdded{Content: "after"})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err = history.Messages(ctx, r, "s01")
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := []string{"system:You are Hermes.", "user:summary", "assistant:after"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("history of s01 after it started over: %q %v, want %q", got, err, want)
	}
}
