package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// Undo forks before the n-th last message, across a compression, and
// says what it took back; a conversation without a message has nothing.
func TestUndo(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	add := func(sid string, ps ...schema.Payload) {
		var envs []schema.Envelope
		for _, p := range ps {
			envs = append(envs, schema.MustEnvelope(schema.Meta{SessionID: sid}, p))
		}
		if _, err := store.Append(ctx, events.SessionStream(sid), events.Any, envs...); err != nil {
			t.Fatal(err)
		}
	}
	add("a", schema.SessionStarted{Source: "cli", Reason: schema.StartNew},
		schema.UserMessageAdded{Content: "one"}, schema.AssistantMessageAdded{Content: "1"},
		schema.UserMessageAdded{Content: "two"}, schema.AssistantMessageAdded{Content: "2"})
	add("b", schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: "a"},
		schema.UserMessageAdded{Content: "three"}, schema.AssistantMessageAdded{Content: "3"})
	for _, c := range []struct {
		n           int
		from, text  string
		turns, msgs int
	}{
		{1, "b", "three", 1, 0},
		{2, "a", "two", 2, 2},
		{9, "a", "one", 3, 0},
	} {
		u, err := session.Undo(ctx, store, "b", c.n)
		if err != nil {
			t.Fatal(err)
		}
		if u.From != c.from || u.Text != c.text || u.Turns != c.turns || u.Fork == "" {
			t.Errorf("Undo(%d) = %+v", c.n, u)
		}
		rs, _ := store.ReadStream(ctx, events.SessionStream(u.Fork), events.Forward, 0, 1)
		p, _ := schema.Decode(rs[0].Envelope)
		if st := p.(schema.SessionStarted); st.Reason != schema.StartFork || st.ParentSessionID != c.from || len(st.History) != c.msgs {
			t.Errorf("Undo(%d): the fork starts %+v", c.n, st)
		}
	}
	add("empty", schema.SessionStarted{Source: "cli", Reason: schema.StartNew})
	if _, err := session.Undo(ctx, store, "empty", 1); !errors.Is(err, session.ErrNothingToUndo) {
		t.Errorf("an empty session: %v", err)
	}
}
