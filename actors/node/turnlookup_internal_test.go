package node

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/schema"
)

// readCounter is a store counting the events its ReadStream returns.
type readCounter struct {
	events.Store
	read int
}

func (r *readCounter) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	rs, err := r.Store.ReadStream(ctx, stream, dir, from, limit)
	r.read += len(rs)
	return rs, err
}

// turnCounter is readCounter with the PostgreSQL store's ReadTurn,
// counting the events it returns.
type turnCounter struct {
	readCounter
	pg    *postgres.Store
	turns int
}

func (c *turnCounter) ReadTurn(ctx context.Context, stream, turn string) ([]events.Recorded, error) {
	rs, err := c.pg.ReadTurn(ctx, stream, turn)
	c.turns += len(rs)
	return rs, err
}

// TestLookupTurnReadsTheTurn: a member looks a turn up on PostgreSQL
// reading only the turn's events (and the compressions that say where the
// conversation went on), and finds what reading the whole conversation
// finds: a completed turn with its answer and usage, a started one, one
// never started, one continued in a compression's child session, and a
// deleted session.
func TestLookupTurnReadsTheTurn(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	store, err := postgres.Open(ctx, pg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	env := func(sid, turn string, p schema.Payload) schema.Envelope {
		at = at.Add(time.Second)
		return schema.MustEnvelope(schema.Meta{SessionID: sid, TurnID: turn, Time: at}, p)
	}
	put := func(sid string, evs ...schema.Envelope) {
		t.Helper()
		if _, err := store.Append(ctx, events.SessionStream(sid), events.Any, evs...); err != nil {
			t.Fatal(err)
		}
	}
	put("s", env("s", "", schema.SessionStarted{Source: "api", Reason: schema.StartNew}))
	// A long conversation before the turns looked up.
	for i := range 40 {
		turn := "old-" + strings.Repeat("x", i%3) + string(rune('a'+i%26))
		put("s", env("s", turn, schema.UserMessageAdded{Content: strings.Repeat("long ", 200)}),
			env("s", turn, schema.AssistantMessageAdded{Content: "old answer", Usage: schema.Usage{PromptTokens: 1}}),
			env("s", turn, schema.TurnCompleted{}))
	}
	put("s", env("s", "done", schema.UserMessageAdded{Content: "q"}),
		env("s", "done", schema.AssistantMessageAdded{Content: "thinking aloud", Usage: schema.Usage{PromptTokens: 10}}),
		env("s", "done", schema.AssistantMessageAdded{Content: "the answer", Usage: schema.Usage{PromptTokens: 20, CompletionTokens: 2}}),
		env("s", "done", schema.TurnCompleted{}))
	put("s", env("s", "open", schema.UserMessageAdded{Content: "q2"}))
	put("s", env("s", "moved", schema.UserMessageAdded{Content: "q3"}),
		env("s", "", schema.ContextCompressed{ChildSessionID: "c"}))
	put("c", env("c", "", schema.SessionStarted{Source: "api", Reason: schema.StartCompression, ParentSessionID: "s"}),
		env("c", "moved", schema.AssistantMessageAdded{Content: "answered in the child"}),
		env("c", "moved", schema.TurnCompleted{}))
	put("gone", env("gone", "t", schema.UserMessageAdded{Content: "x"}))
	if err := store.DeleteStream(ctx, events.SessionStream("gone"), events.Any); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ sid, turn string }{{"s", "done"}, {"s", "open"}, {"s", "never"}, {"s", "moved"}, {"gone", "t"}} {
		whole := &readCounter{Store: store}
		want, werr := session.LookupTurn(ctx, whole, c.sid, c.turn)
		part := &turnCounter{readCounter: readCounter{Store: store}, pg: store}
		got, gerr := lookupTurn(ctx, part, c.sid, c.turn)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("turn %s of %s: %+v (%v), want %+v (%v)", c.turn, c.sid, got, gerr, want, werr)
		}
		if c.sid == "s" && whole.read < 120 {
			t.Fatalf("reading the whole conversation read %d events: the test shows nothing", whole.read)
		}
		if part.read > 0 || part.turns > 5 {
			t.Errorf("turn %s of %s: looked up reading %d events whole and %d of the turn; want none whole, at most 5", c.turn, c.sid, part.read, part.turns)
		}
	}
	if st, _ := lookupTurn(ctx, store, "s", "done"); !st.Completed || st.Answer != "the answer" || st.Usage.PromptTokens != 30 {
		t.Fatalf("the completed turn: %+v", st)
	}
	rs, err := store.ReadTurn(ctx, events.SessionStream("s"), "done")
	if err != nil || len(rs) != 5 {
		t.Fatalf("the events read for a turn: %d (%v), want its 4 and the compression", len(rs), err)
	}
}
